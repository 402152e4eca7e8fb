/**
 * The rate limiter on the memory store, with the TestClock for its windows:
 * what a key's rpm and tpm let through, when a refused call may retry, how a
 * call's real tokens replace its estimate, the account's concurrency cap and
 * its permits' renewal, the config's defaults, and the status the edge sends.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, FiberRef, Layer, Scope, TestClock } from "effect"
import { RateLimiterLive } from "../layers/admission/RateLimiterLive.ts"
import { RateLimitStoreMemory } from "../layers/admission/RateLimitStoreMemory.ts"
import type { Principal } from "../services/ApiKeys.ts"
import {
  currentRateLimits,
  RateLimiter,
  type RateLimitStatus,
  RateLimitStore,
  StoreUnavailable
} from "../services/RateLimiter.ts"
import { testConfig } from "./support/testConfig.ts"

const limiterWith = (limits: unknown = {}) =>
  RateLimiterLive.pipe(Layer.provide(RateLimitStoreMemory), Layer.provide(testConfig({ limits })))

let keys = 0
const key = (limits: { rpm?: number | null; tpm?: number | null } = {}, accountId = "acct_1"): Principal => ({
  keyId: `key_${++keys}`,
  accountId,
  scopes: ["chat"],
  ...limits
})

/** One admission in its own scope, closed at once (no concurrency held). */
const admit = (principal: Principal, tokens = 0) =>
  Effect.flatMap(RateLimiter, (limiter) => Effect.scoped(limiter.admit(principal, tokens)))

/** An admission's status as the edge would see it. */
const statusOf = (principal: Principal, tokens = 0) =>
  Effect.gen(function*() {
    const status: RateLimitStatus = {}
    const exit = yield* Effect.exit(Effect.locally(admit(principal, tokens), currentRateLimits, status))
    return { exit, status }
  })

describe("rate limiter (memory store)", () => {
  it.effect("rpm 5: five calls, then 429 with the seconds until one comes back; one more every 12 s", () =>
    Effect.gen(function*() {
      const caller = key({ rpm: 5 })
      for (let i = 0; i < 5; i++) yield* admit(caller)
      const refused = yield* Effect.flip(admit(caller))
      expect(refused).toMatchObject({ _tag: "RateLimited", retryAfterSeconds: 12 })
      expect(refused.message).toContain("5 requests per minute")
      yield* TestClock.adjust("11 seconds")
      expect(yield* Effect.flip(admit(caller))).toMatchObject({ retryAfterSeconds: 1 })
      yield* TestClock.adjust("1 second")
      yield* admit(caller)
      expect(yield* Effect.flip(admit(caller))).toMatchObject({ _tag: "RateLimited" })
      // Another key of the same account has its own window.
      yield* admit(key({ rpm: 5 }))
    }).pipe(Effect.provide(limiterWith())))

  it.effect("the status: limit, remaining and time until full, for each limited window", () =>
    Effect.gen(function*() {
      const caller = key({ rpm: 10, tpm: 1000 })
      const { status } = yield* statusOf(caller, 400)
      expect(status).toEqual({
        requests: { limit: 10, remaining: 9, resetMs: 6000 },
        tokens: { limit: 1000, remaining: 600, resetMs: 24_000 }
      })
      const refused = yield* statusOf(caller, 700)
      expect(Exit.isFailure(refused.exit)).toBe(true)
      expect(refused.status.tokens).toEqual({ limit: 1000, remaining: 600, resetMs: 24_000 })
      // A key with only an rpm has only the requests window.
      expect(Object.keys((yield* statusOf(key({ rpm: 3 }))).status)).toEqual(["requests"])
    }).pipe(Effect.provide(limiterWith())))

  it.effect("tpm counts the estimate at admission and the real tokens once settled", () =>
    Effect.gen(function*() {
      const caller = key({ tpm: 1000 })
      const ticket = yield* admit(caller, 900)
      expect(yield* Effect.flip(admit(caller, 200))).toMatchObject({ _tag: "RateLimited", retryAfterSeconds: 6 })
      // It used 100: the other 800 come back.
      yield* ticket.settle(100)
      const second = yield* admit(caller, 850)
      // It used 1,500: 650 more than estimated, the bucket is in debt.
      yield* second.settle(1500)
      const refused = yield* Effect.flip(admit(caller, 1))
      expect(refused.message).toContain("1000 tokens per minute")
      // 601 tokens (from -600 to 1) take 36.06 s.
      expect(refused.retryAfterSeconds).toBe(37)
      yield* TestClock.adjust("37 seconds")
      yield* admit(caller, 1)
    }).pipe(Effect.provide(limiterWith())))

  it.effect("an estimate larger than the tpm waits for a full bucket instead of never fitting", () =>
    Effect.gen(function*() {
      const caller = key({ tpm: 100 })
      yield* admit(caller, 5000)
      expect(yield* Effect.flip(admit(caller, 5000))).toMatchObject({ retryAfterSeconds: 60 })
    }).pipe(Effect.provide(limiterWith())))

  it.effect("a call refused on tokens takes no request either", () =>
    Effect.gen(function*() {
      const caller = key({ rpm: 2, tpm: 100 })
      yield* admit(caller, 90)
      yield* Effect.flip(admit(caller, 50))
      yield* Effect.flip(admit(caller, 50))
      yield* admit(caller, 10)
    }).pipe(Effect.provide(limiterWith())))

  it.effect("the config's defaults apply to keys that set none; a key's own limit wins; the operator key is never limited", () =>
    Effect.gen(function*() {
      const plain = key()
      yield* admit(plain)
      yield* admit(plain)
      expect(yield* Effect.flip(admit(plain))).toMatchObject({ _tag: "RateLimited" })
      const other = key()
      yield* admit(other, 400)
      expect(yield* Effect.flip(admit(other, 200))).toMatchObject({
        message: expect.stringContaining("500 tokens per minute")
      })
      const own = key({ rpm: 3 })
      for (let i = 0; i < 3; i++) yield* admit(own)
      const operator: Principal = { keyId: "key_bootstrap", accountId: null, scopes: ["admin"] }
      for (let i = 0; i < 10; i++) yield* admit(operator, 10_000)
    }).pipe(Effect.provide(limiterWith({ defaults: { rpm: 2, tpm: 500 } }))))

  it.effect("no limits anywhere: nothing counted, no status", () =>
    Effect.gen(function*() {
      const caller = key()
      for (let i = 0; i < 100; i++) yield* admit(caller, 1_000_000)
      expect((yield* statusOf(caller)).status).toEqual({})
    }).pipe(Effect.provide(limiterWith())))

  it.effect("concurrency: the account's calls hold permits until their scopes close; permits are renewed while held", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter
      const [a, b] = [key({}, "acct_busy"), key({}, "acct_busy")]
      const first = yield* Scope.make()
      const second = yield* Scope.make()
      yield* Scope.extend(limiter.admit(a, 0), first)
      yield* Scope.extend(limiter.admit(b, 0), second)
      const refused = yield* Effect.flip(Effect.scoped(limiter.admit(a, 0)))
      expect(refused).toMatchObject({ _tag: "RateLimited", retryAfterSeconds: 1 })
      expect(refused.message).toContain("2 concurrent calls")
      // Another account is not affected.
      yield* Effect.scoped(limiter.admit(key({}, "acct_other"), 0))
      // Long past the 30 s lease, the calls still run: their permits were renewed.
      yield* TestClock.adjust("5 minutes")
      yield* Effect.flip(Effect.scoped(limiter.admit(a, 0)))
      yield* Scope.close(first, Exit.void)
      yield* Effect.scoped(limiter.admit(a, 0))
      yield* Scope.close(second, Exit.fail("the call failed"))
      const third = yield* Scope.make()
      yield* Scope.extend(limiter.admit(a, 0), third)
      yield* Scope.extend(limiter.admit(a, 0), third)
      yield* Effect.flip(Effect.scoped(limiter.admit(a, 0)))
    }).pipe(Effect.provide(limiterWith({ defaults: { concurrency: 2 } }))))

  it.effect("a call refused on its rate gives its concurrency permit back", () =>
    Effect.gen(function*() {
      const caller = key({ rpm: 1 }, "acct_one")
      yield* admit(caller)
      yield* Effect.flip(admit(caller))
      yield* Effect.flip(admit(caller))
      // Had the refusals kept their permits, a call of another key of the account would be refused too.
      yield* admit(key({}, "acct_one"))
    }).pipe(Effect.provide(limiterWith({ defaults: { concurrency: 1 } }))))

  it.effect("a store that cannot be reached: 503 service_unavailable with Retry-After, not a 500", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(admit(key({ rpm: 5 })))
      expect(refused).toMatchObject({ _tag: "ServiceUnavailable", retryAfterSeconds: 1 })
      // A key with no limits never asks the store.
      yield* admit(key())
    }).pipe(Effect.provide(
      RateLimiterLive.pipe(
        Layer.provide(Layer.succeed(RateLimitStore, {
          count: () => Effect.fail(new StoreUnavailable({ cause: new Error("connection refused") })),
          permits: () => Effect.die("unused"),
          renew: () => Effect.die("unused")
        })),
        Layer.provide(testConfig())
      )
    )))

  it.effect("a key's calls that arrive together are counted together, and exactly as one by one", () => {
    const counts: Array<number> = []
    const counting = Layer.effect(
      RateLimitStore,
      Effect.map(RateLimitStore, (store) => ({
        ...store,
        // A count takes a moment, as a round trip does: calls that come meanwhile queue for the next.
        count: (buckets, steps, nowMs) =>
          Effect.sync(() => counts.push(steps.length)).pipe(Effect.zipRight(Effect.yieldNow()), Effect.zipRight(store.count(buckets, steps, nowMs)))
      }) satisfies RateLimitStore["Type"])
    ).pipe(Layer.provide(RateLimitStoreMemory))
    return Effect.gen(function*() {
      const caller = key({ rpm: 10, tpm: 1000 })
      const exits = yield* Effect.all(Array.from({ length: 30 }, () => Effect.exit(admit(caller, 10))), {
        concurrency: "unbounded"
      })
      expect(exits.filter(Exit.isSuccess)).toHaveLength(10)
      // The first runs alone; the rest went together into a few counts, not one each.
      expect(counts.reduce((sum, steps) => sum + steps, 0)).toBe(30)
      expect(counts.length).toBeLessThan(30)
      expect(counts.length).toBeGreaterThan(1)
    }).pipe(Effect.provide(RateLimiterLive.pipe(Layer.provide(counting), Layer.provide(testConfig({})))))
  })

  it.effect("the status cell is left alone when no request set one", () =>
    Effect.gen(function*() {
      yield* admit(key({ rpm: 1 }))
      expect(yield* FiberRef.get(currentRateLimits)).toBeNull()
    }).pipe(Effect.provide(limiterWith())))
})
