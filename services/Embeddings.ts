/**
 * Embeddings in the OpenAI wire format (`POST /v1/embeddings`), and the
 * neutral shapes an adapter speaks: strings in, one vector per string and the
 * input token count out. Encoding (`float` / `base64`) is ours, never the upstream's.
 */
import { Schema } from "effect"

/** Inputs per request, as OpenAI allows. */
export const MAX_EMBEDDING_INPUTS = 2048
/** Largest `dimensions` accepted of any model; a model's own (catalogue `dimensions`) may be smaller. */
export const MAX_EMBEDDING_DIMENSIONS = 4096
/** Input tokens of one request, all inputs together, as OpenAI allows. */
export const MAX_EMBEDDING_REQUEST_TOKENS = 300_000

export const EmbeddingsRequest = Schema.Struct({
  model: Schema.String,
  input: Schema.Union(
    Schema.String,
    Schema.Array(Schema.String).pipe(Schema.minItems(1), Schema.maxItems(MAX_EMBEDDING_INPUTS))
  ),
  encoding_format: Schema.optional(Schema.Literal("float", "base64")),
  dimensions: Schema.optional(Schema.Int.pipe(Schema.between(1, MAX_EMBEDDING_DIMENSIONS))),
  user: Schema.optional(Schema.String)
}).annotations({ identifier: "EmbeddingsRequest" })
export type EmbeddingsRequest = typeof EmbeddingsRequest.Type

export const EmbeddingsResponse = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(Schema.Struct({
    object: Schema.Literal("embedding"),
    index: Schema.Int,
    /** Numbers, or little-endian float32s in base64 with `encoding_format: "base64"`. */
    embedding: Schema.Union(Schema.Array(Schema.Number), Schema.String)
  })),
  model: Schema.String,
  usage: Schema.Struct({ prompt_tokens: Schema.Int, total_tokens: Schema.Int })
}).annotations({ identifier: "EmbeddingsResponse" })
export type EmbeddingsResponse = typeof EmbeddingsResponse.Type

/** One embeddings call to an upstream, in neutral form. */
export interface EmbedCall {
  readonly input: ReadonlyArray<string>
  readonly dimensions?: number | undefined
  readonly user?: string | undefined
  readonly upstreamModel: string
}

/** An upstream's answer: one vector per input, in input order, and the input tokens it counted (when it said). */
export interface EmbedResult {
  readonly embeddings: ReadonlyArray<ReadonlyArray<number>>
  /** Absent when the upstream reported no usage: the gateway's own count is billed. */
  readonly promptTokens: number | undefined
}

/** The request's inputs as a list. */
export const inputsOf = (request: EmbeddingsRequest): ReadonlyArray<string> =>
  typeof request.input === "string" ? [request.input] : request.input

const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

/** A vector as OpenAI's base64 encoding: little-endian float32s (one copy into a Float32Array on little-endian machines). */
export const toBase64 = (vector: ReadonlyArray<number>): string => {
  if (littleEndian) return Buffer.from(Float32Array.from(vector).buffer).toString("base64")
  const buffer = Buffer.alloc(vector.length * 4)
  vector.forEach((value, i) => buffer.writeFloatLE(value, i * 4))
  return buffer.toString("base64")
}
