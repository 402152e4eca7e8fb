/**
 * The sandbox's embeddings: deterministic unit vectors of a text's meaning
 * (pre-trained word vectors, wordVectors.ts) and of its words (hashes of its
 * tokens), so a paraphrase lies close to what it restates, and texts sharing
 * rare words lie close too. Made in place in
 * one typed array per input, a turn of the event loop every
 * `INPUTS_PER_TURN` inputs, so 2,048 inputs of 1,536 dimensions do not stall
 * other requests.
 */
import { Effect } from "effect"
import type { EmbedCall, EmbedResult } from "../../../services/Embeddings.ts"
import { eventLoopTurn } from "../../support/eventLoopTurn.ts"
import { countTokens, tokenize } from "./tokens.ts"
import { wordVectors } from "./wordVectors.ts"

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

/** mulberry32: adds `sum.length` pseudo-random values in [-1, 1) from a seed to `sum`, times `weight`. */
const addNoise = (sum: Float64Array, seed: number, weight: number) => {
  let state = seed
  for (let i = 0; i < sum.length; i++) {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    sum[i]! += weight * ((((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1)
  }
}

/** Marks and punctuation say little about what a text is about. */
const MARK_WEIGHT = 0.1
const WORDLIKE = /^[\p{L}\p{N}_]+$/u

/**
 * Hashes of the text's tokens (lower-cased) as a unit vector of `dimensions`, each weighted by how
 * rare the word is (wordVectors.ts): texts sharing telling words lie close, not texts sharing "the".
 */
const lexical = (model: string, text: string, dimensions: number): Float64Array => {
  const sum = new Float64Array(dimensions)
  const vectors = wordVectors()
  const tokens = tokenize(text.toLowerCase()).map((match) => match[0])
  if (tokens.length === 0) addNoise(sum, fnv1a(`${model}\u0000\u0000${text}`), 1)
  for (const token of tokens) {
    const weight = WORDLIKE.test(token) ? vectors?.weight(token) ?? 1 : MARK_WEIGHT
    addNoise(sum, fnv1a(`${model}\u0000${token}`), weight)
  }
  return unit(sum)
}

const unit = (vector: Float64Array): Float64Array => {
  let squares = 0
  for (let i = 0; i < vector.length; i++) squares += vector[i]! * vector[i]!
  const norm = Math.sqrt(squares) || 1
  for (let i = 0; i < vector.length; i++) vector[i]! /= norm
  return vector
}

/**
 * How much of a text's embedding is its meaning (word vectors) rather than its words (hashes):
 * the cosine of two embeddings is this share of their meanings' cosine plus the rest of their
 * words' (measured on the retrieval evaluation set: bench/retrieval.ts).
 */
export const MEANING_SHARE = 0.5

/**
 * A unit-length vector: the text's meaning (its words' vectors, wordVectors.ts) in the first
 * block, at most half the dimensions, and hashes of its words in the rest; only the hashes for a
 * text with no known word, or when the word vectors were never made.
 */
const embedText = (model: string, text: string, dimensions: number, meaningShare = MEANING_SHARE): Array<number> => {
  const meaning = wordVectors()?.meaning(text)
  const semantic = meaning === undefined ? 0 : Math.min(meaning.length, Math.floor(dimensions / 2))
  if (semantic === 0) return Array.from(lexical(model, text, dimensions))
  const words = lexical(model, text, dimensions - semantic)
  const sense = unit(meaning!.slice(0, semantic))
  const [a, b] = [Math.sqrt(meaningShare), Math.sqrt(1 - meaningShare)]
  const out = new Array<number>(dimensions)
  for (let i = 0; i < semantic; i++) out[i] = a * sense[i]!
  for (let i = 0; i < words.length; i++) out[semantic + i] = b * words[i]!
  return out
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
