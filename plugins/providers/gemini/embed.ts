/**
 * Gemini's `batchEmbedContents`: one request per input, in input order, with
 * the `taskType` the provider's options name.
 * Gemini reports no token usage for embeddings, so we bill on our own
 * o200k_base count, the tokenizer the gateway's estimates use.
 */
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import type { EmbedCall, EmbedResult } from "../../../services/Embeddings.ts"
import { arrayOf, errorKindOf, type Json, Malformed, recordOf } from "../../support/json.ts"
import { modelPathOf } from "./request.ts"

/** User text may contain `<|endoftext|>` and the like: count it as plain text. */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() }

/** `taskType` (from the provider's options) tells Gemini what the vectors are for. */
export const embeddingsBody = (call: EmbedCall, taskType?: string): Json => {
  const model = modelPathOf(call.upstreamModel)
  return {
    requests: call.input.map((text) => ({
      model,
      content: { parts: [{ text }] },
      ...(taskType !== undefined ? { taskType } : {}),
      ...(call.dimensions !== undefined ? { outputDimensionality: call.dimensions } : {})
    }))
  }
}

const vectorOf = (u: unknown): Array<number> =>
  arrayOf(u, "embedding values").map((value) => {
    if (typeof value === "number" && Number.isFinite(value)) return value
    throw new Malformed("embedding holds a value that is not a finite number")
  })

export const embeddingsOf = (u: unknown, input: ReadonlyArray<string>): EmbedResult => {
  const json = recordOf(u, "embeddings response")
  if (json.error !== undefined && json.error !== null && json.embeddings === undefined) {
    throw new Malformed(`upstream reported an error (${errorKindOf(json.error)})`)
  }
  const items = arrayOf(json.embeddings, "embeddings")
  if (items.length !== input.length) throw new Malformed(`${items.length} embeddings for ${input.length} inputs`)
  return {
    embeddings: items.map((item) => vectorOf(recordOf(item, "embedding").values)),
    // Gemini reports no token usage for embeddings: we bill on our own o200k_base count,
    // the tokenizer the gateway's estimates use.
    promptTokens: input.reduce((sum, text) => sum + (text === "" ? 0 : countTokens(text, PLAIN_TEXT)), 0)
  }
}
