/**
 * The shape rules of a JSON body, checked on its text in one linear pass
 * before it is parsed (parsing 10 million nested brackets alone takes
 * seconds, and deep values overflow the stack of whatever walks them later):
 * nesting at most `maxDepth` deep, arrays of at most `maxArrayItems` items,
 * and strings that are valid Unicode text without NUL — a `\u0000` or an
 * unpaired surrogate escape (`\ud800`) cannot be stored by PostgreSQL. Raw
 * bytes cannot carry either: the body is decoded as UTF-8 (invalid sequences
 * become U+FFFD) and JSON forbids raw control characters in strings.
 * Anything else that is not JSON is left to the parser.
 */
import { quote } from "../../services/quote.ts"

export interface ShapeLimits {
  readonly maxDepth: number
  readonly maxArrayItems: number
}

/** What is wrong with a body, and where (`param`, as callers write a field path). */
export interface ShapeFault {
  readonly message: string
  readonly param: string | null
}

interface Frame {
  readonly array: boolean
  /** Commas seen at this level: an array has `commas + 1` items once it has any. */
  commas: number
  expectKey: boolean
  /** The raw text of the last key seen in an object. */
  key: string
}

const QUOTE = 0x22
const BACKSLASH = 0x5c

const pathOf = (frames: ReadonlyArray<Frame>): string | null => {
  let path = ""
  for (const frame of frames) {
    if (frame.array) path += `[${frame.commas}]`
    else if (frame.key !== "") path += path === "" ? frame.key : `.${frame.key}`
  }
  return path === "" ? null : path
}

const unitAt = (text: string, at: number): number =>
  text.charCodeAt(at) === BACKSLASH && text.charCodeAt(at + 1) === 0x75 ? parseInt(text.slice(at + 2, at + 6), 16) : NaN

/** Length of the escape at `at` (a backslash), or a fault's message when it escapes NUL or half a surrogate pair. */
const escapeAt = (text: string, at: number): number | string => {
  if (text.charCodeAt(at + 1) !== 0x75) return 2
  const unit = unitAt(text, at)
  if (unit === 0) return "contains a NUL character (\\u0000)"
  if (unit >= 0xdc00 && unit <= 0xdfff) return "contains an unpaired surrogate (not valid Unicode text)"
  if (unit >= 0xd800 && unit <= 0xdbff) {
    const low = unitAt(text, at + 6)
    return low >= 0xdc00 && low <= 0xdfff ? 12 : "contains an unpaired surrogate (not valid Unicode text)"
  }
  return 6
}

/** The first rule `text` breaks, or undefined. */
export const shapeFault = (text: string, limits: ShapeLimits): ShapeFault | undefined => {
  const frames: Array<Frame> = []
  const fault = (message: string): ShapeFault => ({ message, param: pathOf(frames) })
  let nextEscape = text.indexOf("\\")
  let i = 0
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      const start = i + 1
      let at = start
      for (;;) {
        const close = text.indexOf("\"", at)
        if (close < 0) return undefined // unterminated: the parser says so
        if (nextEscape >= 0 && nextEscape < at) nextEscape = text.indexOf("\\", at)
        if (nextEscape < 0 || nextEscape > close) {
          at = close
          break
        }
        const step = escapeAt(text, nextEscape)
        if (typeof step === "string") return fault(`A string in the body ${step}.`)
        at = nextEscape + step
      }
      const top = frames[frames.length - 1]
      if (top !== undefined && !top.array && top.expectKey) {
        top.key = quote(text.slice(start, at))
        top.expectKey = false
      }
      i = at + 1
      continue
    }
    if (c === 0x5b || c === 0x7b) {
      if (frames.length >= limits.maxDepth) {
        return fault(`The body nests arrays and objects deeper than ${limits.maxDepth} levels.`)
      }
      frames.push({ array: c === 0x5b, commas: 0, expectKey: c === 0x7b, key: "" })
    } else if (c === 0x5d || c === 0x7d) {
      frames.pop()
    } else if (c === 0x2c) {
      const top = frames[frames.length - 1]
      if (top !== undefined && top.array) {
        top.commas++
        if (top.commas >= limits.maxArrayItems) {
          return fault(`An array in the body has more than ${limits.maxArrayItems} items.`)
        }
      } else if (top !== undefined) top.expectKey = true
    }
    i++
  }
  return undefined
}
