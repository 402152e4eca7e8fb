/**
 * Our pools read `timestamptz` with pg's parser, remembering the last text
 * (layers/storage/timestampParsing.ts): the same instants as pg's, a `Date`
 * of its own each time, and a new text parsed anew.
 */
import pg from "pg"
import { describe, expect, it } from "vitest"
import { poolTypes, rememberingTimestamptz } from "../layers/storage/timestampParsing.ts"

const pgParse = pg.types.getTypeParser(1184, "text") as (text: string) => Date

describe("timestamptz parsing", () => {
  it("reads the instants pg reads, a Date of its own each time", () => {
    const texts = [
      "2026-11-29 20:11:10.123456+00",
      "2026-11-29 20:11:10.123456+00",
      "2026-11-29 21:11:10.123456+01",
      "1999-12-31 23:59:59.999999-08",
      "2026-11-29 20:11:10+00",
      "2026-11-29 20:11:10.123456+00"
    ]
    const read = texts.map(rememberingTimestamptz)
    expect(read.map((date) => date.getTime())).toEqual(texts.map((text) => pgParse(text).getTime()))
    expect(read[0]).not.toBe(read[1])
    read[0]!.setTime(0)
    expect(rememberingTimestamptz(texts[5]!).getTime()).toBe(pgParse(texts[5]!).getTime())
  })

  it("is what a pool's clients use for timestamptz, and pg's own parser for the rest", () => {
    expect(poolTypes.getTypeParser(1184, "text")).toBe(rememberingTimestamptz)
    expect(poolTypes.getTypeParser(1114, "text")).toBe(pg.types.getTypeParser(1114, "text"))
    expect(poolTypes.getTypeParser(20, "text")).toBe(pg.types.getTypeParser(20, "text"))
  })
})
