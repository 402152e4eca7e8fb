/**
 * Adversarial values for the fuzz suite: strings with NUL, control
 * characters, unpaired surrogates, odd Unicode and great length; numbers at
 * the edges of every integer type and JSON's own (written as raw tokens, so
 * `1e400` and `-0` reach the server as sent); nesting far deeper than the
 * limit and arrays far longer; prototype-pollution keys. A `Raw` value is
 * JSON text spliced into the body as it is.
 */
import fc from "fast-check"

/** JSON text put into a body unchanged (deep nesting, huge arrays, numbers JSON.stringify would rewrite). */
export class Raw {
  constructor(readonly text: string) {}
}

const SPECIAL = [
  "\u0000", "a\u0000b", "\ud800", "\udfff", "x\ud83d", "\ude00y", "\ud83d\ude00", "\u0001\u0007\u001b", "\r\n", "\t",
  "\u202e", "\ufeff", "\uffff", "é", "ｓｖｃ", "..", "../../etc/passwd", "%00", "%", "%zz", "/", "\\", "\"", "'",
  "<script>", "${x}", "svc/pro", "svc/embed", "auto", " ", "", "null", "__proto__", "constructor"
]

/** Strings a caller could send, from ordinary to hostile. */
export const weirdString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL) },
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 2, arbitrary: fc.tuple(fc.string({ maxLength: 8 }), fc.constantFrom(...SPECIAL), fc.string({ maxLength: 8 })).map((parts) => parts.join("")) },
  // Long strings; the few-megabyte ones are separate examples (test/fuzz.test.ts). Runs of one
  // character (once quadratic to count: a 40,000-character run took ~2 s) and runs of words.
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom("x", "AB", "é", "\ud83d\ude00"), fc.integer({ min: 65, max: 100_000 })).map(([unit, n]) => unit.repeat(n)) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom("lorem ", "a b ", "ünï cødé "), fc.integer({ min: 100, max: 10_000 })).map(([unit, n]) => unit.repeat(n)) }
)

/** Number tokens at the edges: integer types, JSON's range, fractions, signs. */
const NUMBER_TOKENS = [
  "0", "-0", "1", "-1", "0.5", "1.5", "2147483647", "-2147483648", "4294967295", "9007199254740991", "9007199254740993",
  "-9007199254740993", "1e308", "1e400", "-1e400", "1e-400", "123456789012345678901234567890", "0.000000001", "1E2", "2.0"
]

export const weirdNumber: fc.Arbitrary<Raw> = fc.oneof(
  fc.constantFrom(...NUMBER_TOKENS),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => JSON.stringify(value))
).map((text) => new Raw(text))

const nested = (depth: number, open: string, close: string, inner: string) => open.repeat(depth) + inner + close.repeat(depth)

/** Nesting from just past a sane schema to far past any limit. */
export const deepValue: fc.Arbitrary<Raw> = fc.tuple(fc.integer({ min: 10, max: 120_000 }), fc.boolean()).map(([depth, arrays]) =>
  new Raw(arrays ? nested(depth, "[", "]", "1") : nested(depth, "{\"a\":", "}", "1"))
)

/** Arrays around and past the item limit (small items, so a body stays small). */
export const longArray: fc.Arbitrary<Raw> = fc.tuple(fc.integer({ min: 1_000, max: 30_000 }), fc.constantFrom("0", "\"\"", "null", "{}", "[]"))
  .map(([length, item]) => new Raw(`[${Array(length).fill(item).join(",")}]`))

/** Keys that would pollute a prototype if copied naively. */
export const PROTO_KEYS = ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty"] as const

/** Any value a field could be given. */
export const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: weirdString },
  { weight: 4, arbitrary: weirdNumber },
  { weight: 2, arbitrary: fc.constantFrom(null, true, false, [], {}) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.array(weirdString, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom(...PROTO_KEYS, "x"), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }) },
  { weight: 1, arbitrary: deepValue },
  { weight: 1, arbitrary: longArray }
)

/** A value as JSON text, `Raw` parts spliced in as they are. */
export const toJsonText = (value: unknown): string => {
  const raws: Array<string> = []
  const text = JSON.stringify(value, (_, inner) => {
    if (!(inner instanceof Raw)) return inner
    raws.push(inner.text)
    return `@@raw${raws.length - 1}@@`
  })
  return raws.length === 0 ? text : text.replace(/"@@raw(\d+)@@"/g, (_, index) => raws[Number(index)]!)
}
