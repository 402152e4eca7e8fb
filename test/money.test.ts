/** Exact money: decimal strings to integer nano-dollars and back, with no float anywhere. */
import { Option, Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { formatBigUsd, formatUsd, NonNegativeUsd, parseUsd } from "../services/Money.ts"

describe("money", () => {
  it.each([
    ["0", 0n],
    ["10.5", 10_500_000_000n],
    ["0.000000001", 1n],
    ["0.1", 100_000_000n],
    ["123456789012345678.123456789", 123456789012345678123456789n],
    ["-2.25", -2_250_000_000n]
  ])("parses %s exactly", (text, nanos) => {
    expect(parseUsd(text)).toEqual(Option.some(nanos))
  })

  it.each(["", "abc", "1.2.3", "1e3", "0.0000000001", ".5", "5.", "0x10", "Infinity", "NaN"])("refuses %j", (text) => {
    expect(Option.isNone(parseUsd(text))).toBe(true)
  })

  it("adds 0.1 and 0.2 to exactly 0.3", () => {
    const sum = Option.getOrThrow(parseUsd("0.1")) + Option.getOrThrow(parseUsd("0.2"))
    expect(formatUsd(sum)).toBe("0.300000000")
  })

  it("formats with nine places and a sign", () => {
    expect(formatUsd(123_450n)).toBe("0.000123450")
    expect(formatUsd(-1n)).toBe("-0.000000001")
    expect(formatUsd(7n * 1_000_000_000n)).toBe("7.000000000")
  })

  it("formats an amount below 2^53 nanos as the bigint path does, and round-trips it", () => {
    const safe = BigInt(Number.MAX_SAFE_INTEGER)
    const edges = [0n, 1n, 999_999_999n, 1_000_000_000n, 1_000_000_001n, safe, safe - 1n, safe + 1n, safe * 1000n]
    for (const nanos of edges.flatMap((n) => [n, -n])) {
      expect(formatUsd(nanos)).toBe(formatBigUsd(nanos))
      expect(parseUsd(formatUsd(nanos))).toEqual(Option.some(nanos))
    }
    fc.assert(
      fc.property(fc.bigInt({ min: -safe * 4n, max: safe * 4n }), (nanos) => {
        expect(formatUsd(nanos)).toBe(formatBigUsd(nanos))
        expect(parseUsd(formatUsd(nanos))).toEqual(Option.some(nanos))
      }),
      { numRuns: 20_000 }
    )
    // Amounts of whole dollars, and a nano below one, across the fast path's range.
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: safe / 1_000_000_000n }), (dollars) => {
        for (const nanos of [dollars * 1_000_000_000n, dollars * 1_000_000_000n - 1n]) {
          expect(formatUsd(nanos)).toBe(formatBigUsd(nanos))
        }
      }),
      { numRuns: 20_000 }
    )
  })

  it("round-trips every decimal it accepts", () => {
    for (const text of ["0.000000000", "1.000000001", "99999.999999999"]) {
      expect(formatUsd(Option.getOrThrow(parseUsd(text)))).toBe(text)
    }
  })

  it("refuses negative amounts where they make no sense", () => {
    expect(Schema.decodeUnknownEither(NonNegativeUsd)("-0.01")._tag).toBe("Left")
    expect(Schema.decodeUnknownEither(NonNegativeUsd)("0.01")._tag).toBe("Right")
  })
})
