/**
 * OpenAI's embeddings call: floats only, whatever we are asked for (the
 * gateway applies the caller's encoding), and the answer checked to hold one
 * finite vector per input, in input order, with the upstream's token count
 * (when it gives a sane one; else the gateway bills its own count).
 */
import type { EmbedCall, EmbedResult } from "../../../services/Embeddings.ts"
import { arrayOf, errorKindOf, intOr, isRecord, type Json, Malformed, recordOf } from "../../support/json.ts"

export const embeddingsBody = (call: EmbedCall): Json => ({
  model: call.upstreamModel,
  input: call.input,
  encoding_format: "float",
  ...(call.dimensions !== undefined ? { dimensions: call.dimensions } : {}),
  ...(call.user !== undefined ? { user: call.user } : {})
})

const vectorOf = (u: unknown): Array<number> =>
  arrayOf(u, "embedding").map((value) => {
    if (typeof value === "number" && Number.isFinite(value)) return value
    throw new Malformed("embedding holds a value that is not a finite number")
  })

export const embeddingsOf = (u: unknown, inputs: number): EmbedResult => {
  const json = recordOf(u, "embeddings response")
  if (json.error !== undefined && json.error !== null && json.data === undefined) {
    throw new Malformed(`upstream reported an error (${errorKindOf(json.error)})`)
  }
  const reported = isRecord(json.usage) ? json.usage.prompt_tokens : undefined
  const promptTokens = Number.isSafeInteger(reported) && (reported as number) >= 0 ? reported as number : undefined
  const embeddings = new Array<Array<number>>(inputs)
  arrayOf(json.data, "data").forEach((d, i) => {
    const item = recordOf(d, "embedding item")
    const index = intOr(item.index, i)
    if (index < 0 || index >= inputs || embeddings[index] !== undefined) throw new Malformed(`bad embedding index ${index}`)
    embeddings[index] = vectorOf(item.embedding)
  })
  for (let i = 0; i < inputs; i++) if (embeddings[i] === undefined) throw new Malformed(`no embedding for input ${i}`)
  return { embeddings, promptTokens }
}
