/**
 * The sandbox's embeddings: deterministic unit vectors from hashes of the
 * text's tokens, so texts sharing words lie close together. Made in place in
 * one typed array per input, a turn of the event loop every
 * `INPUTS_PER_TURN` inputs, so 2,048 inputs of 1,536 dimensions do not stall
 * other requests.
 */
import { Effect } from "effect"
import type { EmbedCall, EmbedResult } from "../../../services/Embeddings.ts"
import { eventLoopTurn } from "../../support/eventLoopTurn.ts"
import { countTokens, tokenize } from "./tokens.ts"

/** Vector length when the caller sets no `dimensions`. */
export const SANDBOX_EMBEDDING_DIMENSIONS = 256

/** FNV-1a, 32 bits: a seed per token. */
const fnv1a = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** Inputs embedded between two turns of the event loop. */
const INPUTS_PER_TURN = 16

/** mulberry32: adds `sum.length` pseudo-random values in [-1, 1) from a seed to `sum`. */
const addNoise = (sum: Float64Array, seed: number) => {
  let state = seed
  for (let i = 0; i < sum.length; i++) {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    sum[i]! += (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1
  }
}

/**
 * A unit-length vector from hashes of the text's tokens (lower-cased), so texts
 * sharing words lie close together; a text without tokens gets one from its own hash.
 */
const embedText = (model: string, text: string, dimensions: number): Array<number> => {
  const sum = new Float64Array(dimensions)
  const tokens = tokenize(text.toLowerCase()).map((match) => match[0])
  for (const token of tokens.length > 0 ? tokens : [`\u0000${text}`]) addNoise(sum, fnv1a(`${model}\u0000${token}`))
  let squares = 0
  for (let i = 0; i < dimensions; i++) squares += sum[i]! * sum[i]!
  const norm = Math.sqrt(squares) || 1
  return Array.from(sum, (value) => value / norm)
}

export const embed = (call: EmbedCall): Effect.Effect<EmbedResult> =>
  Effect.gen(function*() {
    const embeddings: Array<Array<number>> = []
    let promptTokens = 0
    for (const [i, text] of call.input.entries()) {
      if (i > 0 && i % INPUTS_PER_TURN === 0) yield* eventLoopTurn
      embeddings.push(embedText(call.upstreamModel, text, call.dimensions ?? SANDBOX_EMBEDDING_DIMENSIONS))
      promptTokens += countTokens(text)
    }
    return { embeddings, promptTokens }
  })
