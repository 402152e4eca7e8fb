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
 * not. Only digests are kept, never the text; once the cache is full the
 * least recently used go first, as near as `get` keeps them (item 113).
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
  // A Map iterates in insertion order: the first is the one (re)inserted longest ago, and goes first.
  const counts = new Map<string, { readonly tokens: number; at: number }>()
  /** Insertions so far: an entry's `at` is its place in them. */
  let inserted = 0
  /**
   * A used entry moves to the back once half the cache's worth of others came in since it was put there,
   * not on every use: a delete and an insert each time made the map rehash every few calls. Either way a
   * text used within the last half of the cache's insertions is never the next to go.
   */
  const refresh = maxTexts / 2
  return {
    keyOf: (text) => hash("sha256", text, "base64"),
    get: (key) => {
      const entry = counts.get(key)
      if (entry !== undefined && inserted - entry.at >= refresh) {
        counts.delete(key)
        entry.at = ++inserted
        counts.set(key, entry)
      }
      return entry?.tokens
    },
    set: (key, tokens) => {
      counts.delete(key)
      counts.set(key, { tokens, at: ++inserted })
      if (counts.size > maxTexts) counts.delete(counts.keys().next().value!)
    },
    size: () => counts.size
  }
}
