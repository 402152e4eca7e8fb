/**
 * The RateLimitStore contract (services/RateLimiter.ts) as one suite that
 * every store must pass: memory, PostgreSQL and Redis
 * (test/rateLimitStoreContract.test.ts). Time is passed to the store, so the
 * suite moves it by hand and waits for nothing; it starts at the real clock
 * (Redis expires keys in real time).
 */
import { randomBytes } from "node:crypto"
import { expect } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { type Bucket, RateLimitStore } from "../../services/RateLimiter.ts"
import { layer } from "./layer.ts"

export interface StoreUnderTest {
  readonly name: string
  readonly layer: Layer.Layer<RateLimitStore, unknown>
}

const bucket = (limit: number, windowMs = 60_000): Bucket => ({
  key: `key_${randomBytes(6).toString("hex")}:${limit}`,
  limit,
  windowMs
})

const store = RateLimitStore

/** One take, as a count of one step. */
const take = (buckets: ReadonlyArray<Bucket>, amounts: ReadonlyArray<number>, nowMs: number) =>
  Effect.flatMap(store, (s) => Effect.map(s.count(buckets, [{ _tag: "take", amounts }], nowMs), ([taken]) => taken!))

/** A permit asked for alone: its id if granted. */
const acquire = (key: string, limit: number, nowMs: number, expiresMs: number) =>
  Effect.flatMap(store, (s) => {
    const permit = `permit_${randomBytes(6).toString("hex")}`
    return Effect.map(
      s.permits(key, limit, { release: [], acquire: [permit] }, nowMs, expiresMs),
      ([granted]) => granted === true ? Option.some(permit) : Option.none()
    )
  })

/** A permit given back alone. */
const release = (key: string, permit: string, nowMs: number) =>
  Effect.flatMap(store, (s) => Effect.asVoid(s.permits(key, 0, { release: [permit], acquire: [] }, nowMs, nowMs)))

/** One correction of a bucket, as a count of one step. */
const adjust = (bucket: Bucket, delta: number, nowMs: number) =>
  Effect.flatMap(store, (s) => Effect.asVoid(s.count([bucket], [{ _tag: "adjust", bucket: 0, delta }], nowMs)))

export const rateLimitStoreContract = (implementation: StoreUnderTest) =>
  layer(implementation.layer, { timeout: "60 seconds" })(`RateLimitStore contract: ${implementation.name}`, (it) => {
    it.effect("a bucket gives its limit, then refuses, and refills evenly over its window", () =>
      Effect.gen(function*() {
        const now = Date.now()
        const rpm = bucket(5)
        for (let i = 4; i >= 0; i--) {
          const taken = yield* take([rpm], [1], now)
          expect(taken.ok).toBe(true)
          expect(taken.available[0]).toBeCloseTo(i, 6)
        }
        const refused = yield* take([rpm], [1], now + 1)
        expect(refused.ok).toBe(false)
        expect(refused.available[0]).toBeLessThan(1)
        // One request comes back every 12 s.
        expect((yield* take([rpm], [1], now + 12_000)).ok).toBe(true)
        expect((yield* take([rpm], [1], now + 12_001)).ok).toBe(false)
        // A whole window later it is full again, and never fuller.
        expect((yield* take([rpm], [5], now + 12_000 + 120_000)).ok).toBe(true)
      }))

    it.effect("several buckets are taken together or not at all", () =>
      Effect.gen(function*() {
        const now = Date.now()
        const requests = bucket(5)
        const tokens = bucket(100)
        const refused = yield* take([requests, tokens], [1, 101], now)
        expect(refused).toMatchObject({ ok: false })
        expect(refused.available[0]).toBeCloseTo(5, 6)
        expect(refused.available[1]).toBeCloseTo(100, 6)
        const taken = yield* take([requests, tokens], [1, 60], now)
        expect(taken.ok).toBe(true)
        expect(taken.available[0]).toBeCloseTo(4, 6)
        expect(taken.available[1]).toBeCloseTo(40, 6)
        // The tokens fall short: the request is not taken either.
        expect((yield* take([requests, tokens], [1, 41], now)).ok).toBe(false)
        expect((yield* take([requests], [4], now)).ok).toBe(true)
      }))

    it.effect("an adjustment gives back only up to the limit, and takes more into debt", () =>
      Effect.gen(function*() {
        const now = Date.now()
        const tokens = bucket(100)
        expect((yield* take([tokens], [50], now)).ok).toBe(true)
        yield* adjust(tokens, -80, now)
        expect((yield* take([tokens], [101], now)).ok).toBe(false)
        expect((yield* take([tokens], [100], now)).ok).toBe(true)
        yield* adjust(tokens, 50, now)
        const inDebt = yield* take([tokens], [1], now)
        expect(inDebt.ok).toBe(false)
        expect(inDebt.available[0]).toBeCloseTo(-50, 6)
        // 51 tokens take 30.6 s to come back at 100 per minute.
        expect((yield* take([tokens], [1], now + 30_500)).ok).toBe(false)
        expect((yield* take([tokens], [1], now + 30_700)).ok).toBe(true)
        // An adjustment of a bucket never taken starts from a full one.
        const fresh = bucket(10)
        yield* adjust(fresh, 4, now)
        expect((yield* take([fresh], [7], now)).ok).toBe(false)
        expect((yield* take([fresh], [6], now)).ok).toBe(true)
      }))

    it.effect("a count's steps go in order, each as it would alone", () =>
      Effect.gen(function*() {
        const s = yield* store
        const now = Date.now()
        const requests = bucket(3)
        const tokens = bucket(100)
        const outcomes = yield* s.count([requests, tokens], [
          { _tag: "take", amounts: [1, 60] },
          { _tag: "take", amounts: [1, 50] },
          { _tag: "adjust", bucket: 1, delta: -40 },
          { _tag: "take", amounts: [1, 50] },
          { _tag: "take", amounts: [2, 1] },
          { _tag: "adjust", bucket: 1, delta: 95 }
        ], now)
        expect(outcomes.map((taken) => taken.ok)).toEqual([true, false, true, true, false, true])
        const held = outcomes.map((taken) => taken.available.map((tokens) => Math.round(tokens * 1e6) / 1e6))
        // The second take is refused whole (50 > 40): neither bucket moves. The correction gives 40 back;
        // the fourth call fits again, the fifth asks two requests where one is left, and the last correction leaves a debt.
        expect(held).toEqual([[2, 40], [2, 40], [2, 80], [1, 30], [1, 30], [1, -65]])
        // The buckets keep what the last step left.
        const after = yield* take([requests, tokens], [1, 0], now)
        expect(after.ok).toBe(false)
        expect(after.available[1]).toBeCloseTo(-65, 6)
        // A correction gives back only up to the limit.
        const [full] = yield* s.count([requests, tokens], [{ _tag: "adjust", bucket: 1, delta: -1000 }], now)
        expect(full!.available[1]).toBeCloseTo(100, 6)
      }))

    it.effect("buckets of different keys do not share", () =>
      Effect.gen(function*() {
        const now = Date.now()
        const a = bucket(1)
        const b = { ...bucket(1), key: `${a.key}x` }
        expect((yield* take([a], [1], now)).ok).toBe(true)
        expect((yield* take([b], [1], now)).ok).toBe(true)
        expect((yield* take([a], [1], now)).ok).toBe(false)
      }))

    it.effect("takes racing for one bucket never give more than it holds", () =>
      Effect.gen(function*() {
        const now = Date.now()
        const requests = bucket(10)
        const tokens = bucket(1000)
        const results = yield* Effect.all(
          Array.from({ length: 30 }, () => take([requests, tokens], [1, 10], now)),
          { concurrency: "unbounded" }
        )
        expect(results.filter((taken) => taken.ok)).toHaveLength(10)
      }))

    it.effect("permits: at most the limit held at once; a release or an expired lease frees one; a renewal keeps it", () =>
      Effect.gen(function*() {
        const s = yield* store
        const now = Date.now()
        const account = `acct_${randomBytes(6).toString("hex")}`
        const first = yield* acquire(account, 2, now, now + 10_000)
        const second = yield* acquire(account, 2, now, now + 10_000)
        expect(Option.isSome(first) && Option.isSome(second)).toBe(true)
        expect(Option.getOrThrow(first)).not.toBe(Option.getOrThrow(second))
        expect(Option.isNone(yield* acquire(account, 2, now, now + 10_000))).toBe(true)
        expect(Option.isSome(yield* acquire(`${account}x`, 2, now, now + 10_000))).toBe(true)
        yield* release(account, Option.getOrThrow(first), now)
        const third = yield* acquire(account, 2, now, now + 10_000)
        expect(Option.isSome(third)).toBe(true)
        // `second` is renewed, `third` is not: once `third`'s lease has run out only `second` holds.
        yield* s.renew([{ key: account, permit: Option.getOrThrow(second) }], now + 60_000)
        expect(Option.isNone(yield* acquire(account, 2, now + 9_000, now + 20_000))).toBe(true)
        const afterLease = yield* acquire(account, 2, now + 10_001, now + 20_000)
        expect(Option.isSome(afterLease)).toBe(true)
        expect(Option.isNone(yield* acquire(account, 2, now + 10_002, now + 20_000))).toBe(true)
      }))

    it.effect("permits given back and asked for in one step: given back first, then granted in order while there is room", () =>
      Effect.gen(function*() {
        const s = yield* store
        const now = Date.now()
        const account = `acct_${randomBytes(6).toString("hex")}`
        expect(yield* s.permits(account, 2, { release: [], acquire: ["a", "b", "c"] }, now, now + 10_000)).toEqual([true, true, false])
        expect(yield* s.permits(account, 2, { release: ["a"], acquire: ["d", "e"] }, now, now + 10_000)).toEqual([true, false])
        // Only "b" and "d" hold: giving back one unknown and "b" leaves room for one.
        expect(yield* s.permits(account, 2, { release: ["x", "b"], acquire: ["f", "g"] }, now, now + 10_000)).toEqual([true, false])
        expect(yield* s.permits(account, 2, { release: ["d", "f"], acquire: [] }, now, now)).toEqual([])
        expect(yield* s.permits(account, 2, { release: [], acquire: ["h", "i", "j"] }, now, now + 10_000)).toEqual([true, true, false])
      }))

    it.effect("permits racing for the last place: exactly the limit are granted", () =>
      Effect.gen(function*() {
        const now = Date.now()
        const account = `acct_${randomBytes(6).toString("hex")}`
        const results = yield* Effect.all(
          Array.from({ length: 20 }, () => acquire(account, 3, now, now + 10_000)),
          { concurrency: "unbounded" }
        )
        expect(results.filter(Option.isSome)).toHaveLength(3)
      }))
  })
