/**
 * The sandbox's embeddings: deterministic unit vectors from hashes of the
 * text's tokens, so texts sharing words lie close together.
 */
import { Effect } from "effect"
import type { EmbedCall, EmbedResult } from "../../../services/Embeddings.ts"
import { countTokens, tokenize } from "./tokens.ts"

/** Vector length when the caller sets no `dimensions`. */
export const SANDBOX_EMBEDDING_DIMENSIONS = 256

/** FNV-1a, 32 bits: a seed per token. */
const fnv1a = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** mulberry32: `count` pseudo-random values in [-1, 1) from a seed. */
const noise = (seed: number, count: number): Array<number> => {
  let state = seed
  return Array.from({ length: count }, () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1
  })
}

/**
 * A unit-length vector from hashes of the text's tokens (lower-cased), so texts
 * sharing words lie close together; a text without tokens gets one from its own hash.
 */
const embedText = (model: string, text: string, dimensions: number): Array<number> => {
  const sum = new Array<number>(dimensions).fill(0)
  const tokens = tokenize(text.toLowerCase()).map((match) => match[0])
  for (const token of tokens.length > 0 ? tokens : [`\u0000${text}`]) {
    noise(fnv1a(`${model}\u0000${token}`), dimensions).forEach((value, i) => (sum[i]! += value))
  }
  const norm = Math.sqrt(sum.reduce((total, value) => total + value * value, 0)) || 1
  return sum.map((value) => value / norm)
}

export const embed = (call: EmbedCall): Effect.Effect<EmbedResult> =>
  Effect.sync(() => ({
    embeddings: call.input.map((text) =>
      embedText(call.upstreamModel, text, call.dimensions ?? SANDBOX_EMBEDDING_DIMENSIONS)
    ),
    promptTokens: call.input.reduce((sum, text) => sum + countTokens(text), 0)
  }))
