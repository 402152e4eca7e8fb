/**
 * Counting text tokens (o200k_base) in time linear in the text's length, never
 * much below the exact count.
 *
 * The tokenizer first splits text into pre-tokens (words, number groups,
 * punctuation runs, whitespace runs) and then merges the bytes of each one;
 * that merge is quadratic in the pre-token's length, so one long run of a
 * single character (`"AAAA…"`) can pin the process for minutes. Here:
 *
 * - Runs of ordinary pre-tokens (each at most `MAX_PIECE` characters) are
 *   counted by the tokenizer as they are: the count is exact, because they are
 *   cut only where the tokenizer's own split cuts them.
 * - A longer pre-token is counted in slices of `MAX_PIECE` characters, so each
 *   merge has bounded cost, plus two tokens per cut: a cut changes the merges
 *   near it, which can make the slices' sum a token or two off the whole's,
 *   so the added tokens keep the count at or above the exact one (the
 *   property tests check both sides).
 * - Exact counting has a budget of `MAX_EXACT_BYTES` of UTF-8 per request (a
 *   `counter`); a text that does not fit in what is left counts as its byte
 *   length: every token stands for at least one byte, so that is an upper bound.
 *   Ordinary text costs ~0.1 s per MiB to count; high-entropy text (base64,
 *   random letters) ~1–2 s per MiB on a slow core, so the budget bounds that.
 * - A text counted once is remembered by its digest (tokenCountCache.ts):
 *   a conversation sent again with one more turn costs its new turn's count.
 *   The budget is spent the same either way, so every count is what it was.
 */
import { Effect } from "effect"
import { O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants"
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import { eventLoopTurn } from "../../plugins/support/eventLoopTurn.ts"
import { type CountCache, makeCountCache } from "./tokenCountCache.ts"

/** Longest pre-token merged whole (characters). Ordinary words, numbers and CJK phrases are far shorter. */
export const MAX_PIECE = 128
/**
 * UTF-8 bytes counted with the tokenizer per request; beyond, texts count as their byte length.
 * 1 MiB holds a prompt of ~250k tokens of prose, more than most models' context.
 */
export const MAX_EXACT_BYTES = 1 << 20

/** User text may contain `<|endoftext|>` and the like: count it as plain text instead of throwing. */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() }

const exact = (text: string): number => (text.length === 0 ? 0 : countTokens(text, PLAIN_TEXT))

/** UTF-8 length (a lone surrogate is encoded as U+FFFD, three bytes, as the tokenizer encodes it). */
export const utf8Bytes = (text: string): number => Buffer.byteLength(text, "utf8")

const isPair = (high: number, low: number) => high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff

/**
 * Tokens added per cut of a long pre-token: a cut changes the merges on both sides of it, which
 * can make the slices' sum come out a token or two off the whole's either way (fast-check found
 * `"a"×32 + "bbb"` cut after the a's one token low with one added); two keeps the count above.
 */
const TOKENS_PER_CUT = 2

/** A pre-token in slices of at most `maxPiece` code units (never splitting a surrogate pair), plus `TOKENS_PER_CUT` per cut. */
const inSlices = (piece: string, maxPiece: number): number => {
  let tokens = -TOKENS_PER_CUT
  for (let start = 0; start < piece.length;) {
    let end = Math.min(piece.length, start + maxPiece)
    if (end < piece.length && end - start > 1 && isPair(piece.charCodeAt(end - 1), piece.charCodeAt(end))) end--
    tokens += exact(piece.slice(start, end)) + TOKENS_PER_CUT
    start = end
  }
  return tokens
}

const WHITESPACE_ONLY = /^\s+$/u
/** The tokenizer's own pre-token split; one instance, reset before each (synchronous) use. */
const SPLIT = new RegExp(O200K_TOKEN_SPLIT_REGEX.source, "gu")

/**
 * The count of one text, exact except that a pre-token longer than `maxPiece`
 * characters is counted in slices (a parameter only so tests can exercise the
 * cuts on small inputs). Linear in the text's length.
 *
 * The ordinary pre-tokens before a long one are counted together, except the
 * whitespace ones at their end: alone at the end of a text, `"\t"` `"\t"`
 * would be split as one `"\t\t"` (the split looks ahead for non-space), so
 * those are counted one by one.
 */
export const slicedCount = (text: string, maxPiece = MAX_PIECE): number => {
  if (text.length === 0) return 0
  // No piece of a text this short can be too long: the split's pass to find them is skipped.
  if (text.length <= maxPiece) return exact(text)
  const split = SPLIT
  split.lastIndex = 0
  let tokens = 0
  let runStart = 0
  /** Where the whitespace pre-tokens that end the current run start. */
  const trailing: Array<number> = []
  for (let match = split.exec(text); match !== null; match = split.exec(text)) {
    const piece = match[0]
    if (piece.length <= maxPiece) {
      if (WHITESPACE_ONLY.test(piece)) trailing.push(match.index)
      else trailing.length = 0
      continue
    }
    trailing.push(match.index)
    tokens += exact(text.slice(runStart, trailing[0]))
    for (let i = 0; i + 1 < trailing.length; i++) tokens += exact(text.slice(trailing[i], trailing[i + 1]))
    tokens += inSlices(piece, maxPiece)
    runStart = match.index + piece.length
    trailing.length = 0
  }
  return tokens + exact(runStart === 0 ? text : text.slice(runStart))
}

/** The counts this process remembers (a count is a pure function of its text: one cache serves all). */
const REMEMBERED = makeCountCache()

/** `tokens`, remembered under `key`. */
const remembered = (cache: CountCache, key: string, tokens: number) => {
  cache.set(key, tokens)
  return tokens
}

/** `slicedCount`, remembered. */
const rememberedCount = (text: string, cache: CountCache): number => {
  const key = cache.keyOf(text)
  return cache.get(key) ?? remembered(cache, key, slicedCount(text))
}

/**
 * A counter for one request: texts are counted with `slicedCount` while their
 * bytes fit in what is left of `budget`, and as their byte length after that.
 */
export const counter = (budget = MAX_EXACT_BYTES, cache = REMEMBERED): (text: string) => number => {
  let left = budget
  return (text) => {
    if (text.length === 0) return 0
    const bytes = utf8Bytes(text)
    if (bytes > left) return bytes
    left -= bytes
    return rememberedCount(text, cache)
  }
}

/** Characters counted between two turns of the event loop (fairCounter): a few milliseconds of work at worst. */
export const SEGMENT_CHARS = 16 * 1024

/**
 * A text cut into segments of about `size` characters whose counts add up to
 * the whole's: a cut falls only right after a pre-token that is not whitespace
 * (the split never looks behind, and only whitespace pre-tokens look ahead), so
 * each side splits, and therefore counts, exactly as it did in the whole.
 */
export const segmentsOf = (text: string, size = SEGMENT_CHARS): ReadonlyArray<string> => {
  if (text.length <= size) return [text]
  const split = new RegExp(SPLIT.source, "gu")
  const segments: Array<string> = []
  let start = 0
  for (let match = split.exec(text); match !== null; match = split.exec(text)) {
    const end = match.index + match[0].length
    if (end - start >= size && !WHITESPACE_ONLY.test(match[0])) {
      segments.push(text.slice(start, end))
      start = end
    }
  }
  if (start < text.length) segments.push(text.slice(start))
  return segments
}

/**
 * `counter`'s count, as an Effect that gives the event loop a turn (other
 * requests' sockets) between segments of a long text, so counting one large prompt (up to ~1 s of work
 * for 1 MiB of high-entropy text) never holds the event loop for long.
 */
export const fairCounter = (budget = MAX_EXACT_BYTES, cache = REMEMBERED): (text: string) => Effect.Effect<number> => {
  let left = budget
  return (text) =>
    Effect.suspend(() => {
      if (text.length === 0) return Effect.succeed(0)
      const bytes = utf8Bytes(text)
      if (bytes > left) return Effect.succeed(bytes)
      left -= bytes
      // A text remembered needs no turns, however long.
      const key = cache.keyOf(text)
      const known = cache.get(key)
      if (known !== undefined) return Effect.succeed(known)
      const segments = segmentsOf(text)
      if (segments.length === 1) return Effect.succeed(remembered(cache, key, slicedCount(text)))
      return Effect.map(
        Effect.reduce(segments, 0, (sum, segment) => Effect.as(eventLoopTurn, sum + slicedCount(segment))),
        (tokens) => remembered(cache, key, tokens)
      )
    })
}

/** One text with a budget of its own. */
export const countText = (text: string): number => counter()(text)
