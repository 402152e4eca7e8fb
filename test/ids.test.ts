/**
 * Identifiers (layers/platform/IdsLive.ts): the prefix, the time in 12 hex
 * digits, then 96 random bits (16 base64url characters); ids made later sort
 * after ids made earlier, byte by byte, and no two are alike.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { IdsLive } from "../layers/platform/IdsLive.ts"
import { Ids } from "../services/Ids.ts"

describe("IdsLive", () => {
  it.live("makes ids in time order, each with 96 random bits", () =>
    Effect.gen(function*() {
      const ids = yield* Ids
      const before = Date.now()
      const first = Array.from({ length: 300 }, () => ids.make("evt"))
      yield* Effect.sleep(5)
      const later = ids.make("evt")
      for (const id of [...first, later]) expect(id).toMatch(/^evt_[0-9a-f]{12}[A-Za-z0-9_-]{16}$/)
      expect(parseInt(first[0]!.slice(4, 16), 16)).toBeGreaterThanOrEqual(before)
      expect(new Set(first).size).toBe(first.length)
      // Byte order, as a C collation (and any other, for hex) sorts them.
      for (const id of first) expect(Buffer.compare(Buffer.from(id), Buffer.from(later))).toBe(-1)
      expect(ids.completion()).toMatch(/^chatcmpl-[0-9a-f]{12}[A-Za-z0-9_-]{16}$/)
    }).pipe(Effect.provide(IdsLive)))
})
