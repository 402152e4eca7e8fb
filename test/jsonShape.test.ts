/** The edge's shape rules of a JSON body (src/http/jsonShape.ts) and how messages quote input (services/quote.ts). */
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { ConfigFile } from "../services/Config.ts"
import { clip, quote } from "../services/quote.ts"
import { shapeFault } from "../src/http/jsonShape.ts"

const limits = { maxDepth: 4, maxArrayItems: 3 }
const fault = (text: string) => shapeFault(text, limits)

describe("JSON shape rules", () => {
  it("accepts what is within the limits, escapes and surrogate pairs included", () => {
    for (const text of ["{}", "[1,2,3]", "[[[[1]]]]", "{\"a\":\"\\\\u0000\"}", "{\"a\":\"\\\"\\u0041\"}", "\"\\ud83d\\ude00\"", "{\"a,[\":\"]]]]]\"}"]) {
      expect(fault(text), text).toBeUndefined()
    }
  })

  it("refuses nesting past the depth, naming where", () => {
    expect(fault("{\"a\":[{\"b\":[[1]]}]}")).toEqual({
      message: "The body nests arrays and objects deeper than 4 levels.",
      param: "a[0].b[0]"
    })
  })

  it("refuses an array past the item limit, naming it", () => {
    expect(fault("{\"x\":{\"y\":[1,2,3,4]}}")).toEqual({ message: "An array in the body has more than 3 items.", param: "x.y[3]" })
    expect(fault("{\"x\":{\"y\":[1,2,3]},\"z\":[4,5]}")).toBeUndefined()
  })

  it("refuses NUL and unpaired surrogates in values and keys", () => {
    expect(fault("{\"a\":[\"ok\",\"x\\u0000\"]}")).toEqual({ message: "A string in the body contains a NUL character (\\u0000).", param: "a[1]" })
    expect(fault("{\"a\":\"\\ud800x\"}")?.message).toContain("unpaired surrogate")
    expect(fault("{\"a\":\"\\uDC00\"}")?.message).toContain("unpaired surrogate")
    expect(fault("{\"a\":\"\\ud83d\\u0041\"}")?.message).toContain("unpaired surrogate")
    expect(fault("{\"k\\u0000\":1}")?.message).toContain("NUL")
  })

  it("leaves what is not JSON to the parser", () => {
    expect(fault("{\"a\":\"unterminated")).toBeUndefined()
    expect(fault("not json at all")).toBeUndefined()
  })

  it("has documented defaults in the config", () => {
    const { limits } = Schema.decodeUnknownSync(ConfigFile)({})
    expect(limits).toMatchObject({ maxBodyBytes: 20 * 1024 * 1024, maxJsonDepth: 64, maxArrayItems: 10_000 })
    expect(() => Schema.decodeUnknownSync(ConfigFile)({ limits: { maxJsonDepth: 5000 } })).toThrow()
  })
})

describe("quoting input in messages", () => {
  it("quotes short input whole and long input as a prefix and its length", () => {
    expect(quote("svc/pro")).toBe("svc/pro")
    expect(quote("m".repeat(5_000_000))).toBe(`${"m".repeat(48)}… (5000000 characters)`)
  })

  const wellFormed = (text: string) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text)

  it("never cuts a surrogate pair in half", () => {
    const text = "a" + "😀".repeat(40)
    expect(wellFormed(quote(text))).toBe(true)
    expect(wellFormed(clip(text, 10))).toBe(true)
    expect(wellFormed(clip(text, 11))).toBe(true)
    expect(clip("x".repeat(1000)).length).toBe(400)
  })
})
