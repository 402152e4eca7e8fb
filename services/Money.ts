/**
 * Exact money. Amounts are integer nano-dollars (1e-9 USD) held in `bigint`;
 * no binary fraction touches a balance, price or receipt (`formatUsd` uses a
 * double only for an integer it holds exactly). On the wire and
 * in the database an amount is a decimal string with up to nine fraction digits
 * (`"12.500000000"`).
 */
import { Option, ParseResult, Schema } from "effect"

/** Integer nano-dollars. */
export type Nanos = bigint

const SCALE = 9
const ONE_USD = 10n ** BigInt(SCALE)
const DECIMAL = /^(-?)(\d{1,27})(?:\.(\d{1,9}))?$/

/** Parses `"12.5"` into nano-dollars; none for anything that is not an exact decimal of at most 9 places. */
export const parseUsd = (text: string): Option.Option<Nanos> => {
  const match = DECIMAL.exec(text.trim())
  if (match === null) return Option.none()
  const [, sign, whole, fraction = ""] = match
  const nanos = BigInt(whole!) * ONE_USD + BigInt(fraction.padEnd(SCALE, "0"))
  return Option.some(sign === "-" ? -nanos : nanos)
}

/** Amounts up to this many nanos (~9 million USD) are formatted by integer arithmetic on doubles. */
const SAFE_NANOS = BigInt(Number.MAX_SAFE_INTEGER)
const NINE_ZEROS = "000000000"

/**
 * Formats nano-dollars as a decimal string with exactly nine fraction digits. Every call formats
 * several amounts (its bill, receipt and settlement), and a bigint's division and remainder cost
 * twice what a double's do: an amount below 2^53 nanos is an integer a double holds exactly, and
 * its remainder and quotient by 1e9 are exact too, so no float rounding can reach the digits
 * (test/money.test.ts checks both paths agree).
 */
export const formatUsd = (nanos: Nanos): string => {
  if (nanos <= SAFE_NANOS && nanos >= -SAFE_NANOS) {
    const signed = Number(nanos)
    const abs = signed < 0 ? -signed : signed
    const fraction = abs % 1e9
    const digits = String(fraction)
    return `${signed < 0 ? "-" : ""}${(abs - fraction) / 1e9}.${NINE_ZEROS.slice(digits.length)}${digits}`
  }
  return formatBigUsd(nanos)
}

/** `formatUsd` for any amount, in bigint arithmetic. */
export const formatBigUsd = (nanos: Nanos): string => {
  const negative = nanos < 0n
  const abs = negative ? -nanos : nanos
  const whole = abs / ONE_USD
  const fraction = (abs % ONE_USD).toString().padStart(SCALE, "0")
  return `${negative ? "-" : ""}${whole}.${fraction}`
}

/** A `numeric` column as both drivers return it (a decimal string); the schema guarantees the shape. */
export const fromNumericColumn = (column: string): Nanos => Option.getOrThrow(parseUsd(column))

/** Decimal string (as stored or sent) ⇄ nano-dollars. */
export const UsdFromString = Schema.transformOrFail(Schema.String, Schema.BigIntFromSelf, {
  strict: true,
  decode: (text, _, ast) =>
    Option.match(parseUsd(text), {
      onNone: () =>
        ParseResult.fail(new ParseResult.Type(ast, text, "expected a decimal USD amount with at most 9 decimal places")),
      onSome: ParseResult.succeed
    }),
  encode: (nanos) => ParseResult.succeed(formatUsd(nanos))
}).annotations({ identifier: "UsdAmount", description: "USD as a decimal string, at most 9 decimal places" })

/** A non-negative USD amount given as a decimal string. */
export const NonNegativeUsd = UsdFromString.pipe(
  Schema.filter((nanos) => nanos >= 0n || "must not be negative")
)

/** A strictly positive USD amount given as a decimal string. */
export const PositiveUsd = UsdFromString.pipe(
  Schema.filter((nanos) => nanos > 0n || "must be greater than zero")
)
