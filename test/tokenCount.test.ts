/**
 * Token counting is linear and never counts much less than the tokenizer:
 * exact for ordinary text, at most a little above it where long pre-tokens
 * are cut, and the UTF-8 byte length (an upper bound) past the budget. A
 * long text counted once is remembered by its digest and counts the same.
 */
import fc from "fast-check"
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { counter, fairCounter, MAX_EXACT_BYTES, MAX_PIECE, segmentsOf, slicedCount, utf8Bytes } from "../layers/billing/tokenCount.ts"
import { makeCountCache } from "../layers/billing/tokenCountCache.ts"

const exact = (text: string) => countTokens(text, { disallowedSpecial: new Set() })

/** Text where the cuts matter: long runs of one character and of few, several scripts and whitespace kinds. */
const alphabet = ["a", "A", "b", "Z", "7", " ", "\n", "\t", "!", "-", "'", "é", "中", "文", "😀", "\u0301", "\ud800"]
const hostile = fc.array(
  fc.tuple(fc.constantFrom(...alphabet), fc.integer({ min: 1, max: 60 })).map(([c, n]) => c.repeat(n)),
  { maxLength: 12 }
).map((runs) => runs.join(""))

const prose = [
  "The quick brown fox jumps over the lazy dog.",
  "Ünïcödé, emoji 😀 and 中文字符 in one line;\n\tthen a tab and `code()` with 12345 digits.",
  "Don't stop — it's fine, isn't it? I'll see; they'd've known.",
  "<|endoftext|> is counted as plain text here."
]

describe("counting text", () => {
  it("is exact for ordinary text", () => {
    for (const text of prose) expect(counter()(text)).toBe(exact(text))
    fc.assert(fc.property(fc.string({ maxLength: 200 }), (text) => counter()(text) === exact(text)))
    fc.assert(fc.property(fc.string({ unit: "grapheme", maxLength: 100 }), (text) => counter()(text) === exact(text)))
  })

  it("counts pathological and random text no lower than the tokenizer, and at most three tokens per cut above it", () => {
    // Small pieces put many cuts into short texts, where the exact count is still cheap.
    for (const maxPiece of [3, 8, 32]) {
      fc.assert(
        fc.property(hostile, (text) => {
          const bounded = slicedCount(text, maxPiece)
          const truth = exact(text)
          const cuts = Math.ceil(text.length / maxPiece)
          return bounded >= truth && bounded <= truth + 3 * cuts
        }),
        { numRuns: 2000 }
      )
    }
  })

  it("cuts a long run into pieces and still counts it about right", () => {
    const run = "A".repeat(20 * MAX_PIECE)
    expect(slicedCount(run)).toBeGreaterThanOrEqual(exact(run))
    expect(slicedCount(run)).toBeLessThanOrEqual(exact(run) + 2 * 20)
  })

  it("counts text past the request's budget as its UTF-8 byte length, which no token count exceeds", () => {
    const count = counter(100)
    expect(count("hello world")).toBe(2)
    const long = "中".repeat(50)
    expect(count(long)).toBe(150)
    expect(utf8Bytes(long)).toBeGreaterThanOrEqual(exact(long))
    fc.assert(fc.property(hostile, (text) => counter(0)(text) === utf8Bytes(text) && utf8Bytes(text) >= exact(text)))
  })

  it("counts a 5 MB run of one character without the tokenizer", () => {
    const text = "A".repeat(5 * 1024 * 1024)
    expect(text.length).toBeGreaterThan(MAX_EXACT_BYTES)
    expect(counter()(text)).toBe(text.length)
  })

  it("shares the budget between the texts of one request", () => {
    const count = counter(10)
    expect(count("hello")).toBe(1)
    expect(count("hello")).toBe(1)
    expect(count("hello")).toBe(5)
  })
})

describe("counting fairly (admission)", () => {
  const runs = fc.array(fc.oneof(hostile, fc.constantFrom(...prose), fc.string({ unit: "grapheme", maxLength: 80 })), {
    maxLength: 40
  }).map((parts) => parts.join(""))

  it("cuts a text only where the counts of the two sides add up to the whole's", () => {
    fc.assert(
      fc.property(runs, fc.integer({ min: 1, max: 64 }), (text, size) => {
        const segments = segmentsOf(text, size)
        expect(segments.join("")).toBe(text)
        expect(segments.reduce((sum, segment) => sum + slicedCount(segment), 0)).toBe(slicedCount(text))
      }),
      { numRuns: 2000 }
    )
  })

  it("counts what the plain counter counts, sharing the budget the same way", async () => {
    const texts = ["a".repeat(10), prose.join(" ").repeat(2000), "😀 ".repeat(40_000), "tail"]
    // Each with a cache of its own: neither answers from what the other counted.
    const plain = counter(200_000, makeCountCache())
    const fair = fairCounter(200_000, makeCountCache())
    const fairly = await Effect.runPromise(Effect.forEach(texts, fair))
    expect(fairly).toEqual(texts.map(plain))
    expect(segmentsOf(texts[1]!).length).toBeGreaterThan(4)
  })

  it("lets other callbacks run between the segments of a large text", async () => {
    const text = prose.join(" ").repeat(3000) // ~750 KB, inside the exact budget: dozens of segments
    let turns = 0
    let counting = true
    const other = () => {
      turns++
      if (counting) setImmediate(other)
    }
    setImmediate(other)
    const tokens = await Effect.runPromise(fairCounter(MAX_EXACT_BYTES, makeCountCache())(text))
    counting = false
    expect(tokens).toBe(slicedCount(text))
    // Without turns between segments the other callback could not have run at all before the count ended.
    expect(turns).toBeGreaterThan(segmentsOf(text).length / 2)
  })
})

describe("remembering counts of texts", () => {
  const long = prose.join(" ").repeat(20)

  it("remembers a text's count by its digest, a short one's too, and answers it without counting", () => {
    const cache = makeCountCache()
    const count = counter(MAX_EXACT_BYTES, cache)
    expect(count("")).toBe(0)
    expect(cache.size()).toBe(0) // nothing to count, nothing to remember
    for (const text of ["Hi", long]) {
      expect(count(text)).toBe(exact(text))
      // A planted count is what comes back: the second count did not run the tokenizer.
      cache.set(cache.keyOf(text), 7)
      expect(counter(MAX_EXACT_BYTES, cache)(text)).toBe(7)
      expect(cache.keyOf(text)).toMatch(/^[A-Za-z0-9+/]{43}=$/) // a SHA-256 digest: the text itself is not kept
    }
    expect(cache.size()).toBe(2)
  })

  it("spends the request's budget the same, remembered or not: past it a text counts as its bytes", () => {
    const cache = makeCountCache()
    counter(MAX_EXACT_BYTES, cache)(long)
    expect(counter(utf8Bytes(long) - 1, cache)(long)).toBe(utf8Bytes(long))
    const count = counter(utf8Bytes(long) + 10, cache)
    expect(count(long)).toBe(exact(long))
    expect(count(long)).toBe(utf8Bytes(long))
  })

  it("answers a remembered long text without turns, and counts the same as counting it afresh", async () => {
    const cache = makeCountCache()
    const huge = prose.join(" ").repeat(1500)
    expect(segmentsOf(huge).length).toBeGreaterThan(4)
    const first = await Effect.runPromise(fairCounter(MAX_EXACT_BYTES, cache)(huge))
    expect(first).toBe(slicedCount(huge))
    cache.set(cache.keyOf(huge), 11)
    expect(Effect.runSync(fairCounter(MAX_EXACT_BYTES, cache)(huge))).toBe(11) // no turn: runSync would throw on one
    fc.assert(fc.property(fc.array(fc.oneof(hostile, fc.constantFrom(long)), { maxLength: 6 }), (texts) => {
      const remembered = counter(MAX_EXACT_BYTES, cache)
      const afresh = counter(MAX_EXACT_BYTES, makeCountCache())
      return texts.every((text) => remembered(text.repeat(8)) === afresh(text.repeat(8)))
    }), { numRuns: 200 })
  })

  it("forgets the least recently used first once full", () => {
    const cache = makeCountCache(2)
    const [a, b, c] = ["a", "b", "c"].map((letter) => cache.keyOf(letter))
    cache.set(a!, 1)
    cache.set(b!, 2)
    expect(cache.get(a!)).toBe(1) // a is now the most recently used
    cache.set(c!, 3)
    expect([cache.get(a!), cache.get(b!), cache.get(c!)]).toEqual([1, undefined, 3])
    expect(cache.size()).toBe(2)
  })

  it("moves a used text back once half the cache's worth came in after it, so one used lately never goes next", () => {
    const cache = makeCountCache(4)
    const [k1, k2, k3, k4, k5, k6] = [1, 2, 3, 4, 5, 6].map((n) => cache.keyOf(`text ${n}`))
    for (const [i, key] of [k1, k2, k3, k4].entries()) cache.set(key!, i + 1)
    expect(cache.get(k4!)).toBe(4) // just put there: stays where it is
    expect(cache.get(k1!)).toBe(1) // three came in after it: moves to the back
    cache.set(k5!, 5)
    expect(cache.get(k2!)).toBeUndefined() // the first, not k1
    expect(cache.get(k4!)).toBe(4) // two came in after it now: moves back too
    cache.set(k6!, 6)
    expect([k1, k3, k4, k5, k6].map((key) => cache.get(key!))).toEqual([1, undefined, 4, 5, 6])
    expect(cache.size()).toBe(4)
  })
})
