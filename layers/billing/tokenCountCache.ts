/**
 * Token counts of texts, remembered by their SHA-256 digest. A chat client
 * sends the whole conversation again on every turn, and the same system
 * prompt on every call: counted afresh, a 20-turn conversation of ~35 KB cost
 * ~2–6 ms of the event loop per call, where its digest costs ~60 µs
 * (docs/performance.md, item 71). A short text is remembered too: its digest
 * costs a half to a tenth of counting it (item 81), and counting touches the
 * tokenizer's large tables, which a busy process has pushed out of the CPU's
 * caches. A count is a pure function of the text, so one cache serves the
 * whole process and changes no count: a text counts the same remembered or
 * not. Only digests are kept, never the text; the least recently used go
 * first once the cache is full.
 */
import { hash } from "node:crypto"

/** Digests remembered: with the map's own overhead, a few MB at most. */
export const MAX_CACHED_TEXTS = 16_384

export interface CountCache {
  /** The key a text is remembered under: its digest. */
  readonly keyOf: (text: string) => string
  /** A remembered count (it becomes the most recently used). */
  readonly get: (key: string) => number | undefined
  readonly set: (key: string, tokens: number) => void
  readonly size: () => number
}

export const makeCountCache = (maxTexts = MAX_CACHED_TEXTS): CountCache => {
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  const counts = new Map<string, number>()
  return {
    keyOf: (text) => hash("sha256", text, "base64"),
    get: (key) => {
      const tokens = counts.get(key)
      if (tokens !== undefined) {
        counts.delete(key)
        counts.set(key, tokens)
      }
      return tokens
    },
    set: (key, tokens) => {
      counts.delete(key)
      counts.set(key, tokens)
      if (counts.size > maxTexts) counts.delete(counts.keys().next().value!)
    },
    size: () => counts.size
  }
}
