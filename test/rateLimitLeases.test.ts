/**
 * Leases of rate-limit tokens and idle concurrency permits, on the memory
 * store with the TestClock: far from its limits a key's calls are admitted
 * from a lease without a store operation, corrections settle against it, and
 * what is left goes back to the store when the key idles; near a limit each
 * call is counted alone; and however calls are spread over processes sharing
 * a store, no more are admitted than the limits allow.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Scope, TestClock, TestContext } from "effect"
import fc from "fast-check"
import { IDLE_SWEEPS, RateLimiterLive, SWEEP_MS } from "../layers/admission/RateLimiterLive.ts"
import { RateLimitStoreMemory } from "../layers/admission/RateLimitStoreMemory.ts"
import type { Principal } from "../services/ApiKeys.ts"
import { currentRateLimits, RateLimiter, type RateLimitStatus, RateLimitStore } from "../services/RateLimiter.ts"
import { testConfig } from "./support/testConfig.ts"

/** A store that counts the operations asked of it, and what each bucket has had taken in all (takes granted, corrections). */
const counting = (store: RateLimitStore["Type"]) => {
  const ops = { count: 0, permits: 0 }
  const net = new Map<string, number>()
  const add = (key: string, amount: number) => net.set(key, (net.get(key) ?? 0) + amount)
  const counted: RateLimitStore["Type"] = {
    ...store,
    count: (buckets, steps, nowMs) =>
      Effect.suspend(() => {
        ops.count++
        return Effect.tap(store.count(buckets, steps, nowMs), (outcomes) =>
          steps.forEach((step, s) => {
            if (step._tag === "adjust") add(buckets[step.bucket]!.key, step.delta)
            else if (outcomes[s]!.ok) step.amounts.forEach((amount, i) => add(buckets[i]!.key, amount))
          }))
      }),
    permits: (key, limit, step, nowMs, expiresMs) =>
      Effect.suspend(() => (ops.permits++, store.permits(key, limit, step, nowMs, expiresMs)))
  }
  return { net, ops, store: counted }
}

/** A limiter over `store`, as one gateway process would run it. */
const limiterOn = (store: RateLimitStore["Type"]) =>
  Effect.map(
    Layer.build(RateLimiterLive.pipe(Layer.provide(Layer.succeed(RateLimitStore, store)), Layer.provide(testConfig({})))),
    (context) => Context.get(context, RateLimiter)
  )

const sharedStore = Effect.map(Layer.build(RateLimitStoreMemory), (context) => Context.get(context, RateLimitStore))

let keys = 0
const key = (limits: { rpm?: number; tpm?: number; concurrency?: number }, accountId = `acct_${++keys}`): Principal => ({
  keyId: `key_${++keys}`,
  accountId,
  scopes: ["chat"],
  ...limits
})

describe("rate-limit leases", () => {
  it.scoped("far from its limits, a key's calls come from a lease: a few counts for 90 calls, and what is left goes back when the key idles", () =>
    Effect.gen(function*() {
      const { net, ops, store } = counting(yield* sharedStore)
      const limiter = yield* limiterOn(store)
      const caller = key({ rpm: 100_000, tpm: 10_000_000 })
      const status: RateLimitStatus = {}
      for (let i = 0; i < 90; i++) {
        // Each call on its own, as requests come: a lease taken again in the background gets its turn.
        yield* Effect.yieldNow()
        const ticket = yield* Effect.scoped(Effect.locally(limiter.admit(caller, 10), currentRateLimits, status))
        // Each call used 4 of the 10 tokens it was counted for.
        yield* ticket.settle(4)
        if (i === 2) expect(status.requests?.remaining).toBe(100_000 - 3)
      }
      // The first call alone, then one lease of 32 more calls' worth per 33 calls.
      expect(ops.count).toBeLessThanOrEqual(5)
      expect(status.requests?.remaining).toBe(100_000 - 90)
      expect(net.get(`${caller.keyId}:rpm`)).toBeGreaterThan(90)
      // Idle for IDLE_SWEEPS sweeps and one more look: the lease's tokens, its refunds included, are back in the store.
      yield* TestClock.adjust(SWEEP_MS * (IDLE_SWEEPS + 1))
      // What goes back lingers a moment for a next count to go with, then goes alone.
      yield* TestClock.adjust(100)
      expect(net.get(`${caller.keyId}:rpm`)).toBe(90)
      expect(net.get(`${caller.keyId}:tpm`)).toBe(90 * 4)
    }))

  it.scoped("a key called every few seconds keeps its lease and an account its idle permit: no store operation until they idle longer", () =>
    Effect.gen(function*() {
      const { ops, store } = counting(yield* sharedStore)
      const limiter = yield* limiterOn(store)
      const caller = key({ rpm: 100_000, tpm: 10_000_000, concurrency: 32 })
      const call = Effect.flatMap(Effect.scoped(limiter.admit(caller, 10)), (ticket) => ticket.settle(4))
      // The first count sees the buckets, the second takes a lease; the first permit is kept idle.
      yield* call
      yield* call
      const before = { ...ops }
      // A call every 4 s, for 20 s.
      for (let i = 0; i < 5; i++) {
        yield* TestClock.adjust(4_000)
        yield* call
      }
      expect(ops).toEqual(before)
      // Idle past IDLE_SWEEPS sweeps: both go back, so the next call asks the store for each.
      yield* TestClock.adjust(SWEEP_MS * (IDLE_SWEEPS + 1) + 100)
      const returned = { ...ops }
      yield* call
      expect(ops.permits).toBe(returned.permits + 1)
      expect(ops.count).toBe(returned.count + 1)
    }))

  it.scoped("a busy key's lease is taken again before it runs dry: with a store 100 ms away, no call waits for it", () =>
    Effect.gen(function*() {
      const base = yield* sharedStore
      const slow: RateLimitStore["Type"] = {
        ...base,
        count: (buckets, steps, nowMs) => Effect.zipRight(Effect.sleep(100), base.count(buckets, steps, nowMs))
      }
      const { ops, store } = counting(slow)
      // Its own scope, closed below with the clock moving: what it gives back as it stops waits for the slow store.
      const scope = yield* Scope.make()
      const limiter = yield* Scope.extend(limiterOn(store), scope)
      const caller = key({ rpm: 100_000, tpm: 10_000_000 })
      const turns = Effect.repeatN(Effect.yieldNow(), 5)
      /** A call, and whether it had to wait for the store (the clock is moved on until it is answered). */
      const call = Effect.gen(function*() {
        const admitted = yield* Effect.fork(Effect.scoped(limiter.admit(caller, 10)))
        yield* turns
        const waited = Option.isNone(yield* Fiber.poll(admitted))
        while (Option.isNone(yield* Fiber.poll(admitted))) yield* Effect.zipRight(TestClock.adjust(100), turns)
        return waited
      })
      // The first count sees the buckets and the second takes a lease: both wait for the store.
      expect([yield* call, yield* call]).toEqual([true, true])
      // Then a call every 20 ms: each is admitted at once, while the lease is taken again behind them.
      let waited = 0
      for (let i = 0; i < 150; i++) {
        if (yield* call) waited++
        yield* Effect.zipRight(TestClock.adjust(20), turns)
      }
      expect(waited).toBe(0)
      // About one count per lease of 32 calls, not one per call.
      expect(ops.count).toBeGreaterThanOrEqual(2 + 4)
      expect(ops.count).toBeLessThanOrEqual(2 + 6)
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      while (Option.isNone(yield* Fiber.poll(closing))) yield* Effect.zipRight(TestClock.adjust(100), turns)
    }))

  it.scoped("near a limit a lease is at most a sixteenth of what is left: one process admits exactly the limit, another is refused only for what the first holds", () =>
    Effect.gen(function*() {
      const { store } = counting(yield* sharedStore)
      const [one, other] = [yield* limiterOn(store), yield* limiterOn(store)]
      const caller = key({ rpm: 40 })
      const calls = (limiter: RateLimiter["Type"], n: number) =>
        Effect.map(
          Effect.all(Array.from({ length: n }, () => Effect.exit(Effect.scoped(limiter.admit(caller, 0))))),
          (exits) => exits.filter(Exit.isSuccess).length
        )
      expect(yield* calls(one, 20)).toBe(20)
      // The first process holds at most two calls' worth it has not used (a sixteenth of what it last saw left).
      const second = yield* calls(other, 30)
      expect(second).toBeGreaterThanOrEqual(18)
      expect(second).toBeLessThanOrEqual(20)
      // Once the first has been idle long enough, what it held is the other's to take, and no more
      // than the limit and what the bucket refilled meanwhile is ever admitted.
      yield* TestClock.adjust(SWEEP_MS * (IDLE_SWEEPS + 1))
      yield* TestClock.adjust(100)
      const refill = Math.floor(40 * (SWEEP_MS * (IDLE_SWEEPS + 1) + 100) / 60_000)
      expect(yield* calls(other, 10)).toBe(20 - second + refill)
      expect(yield* calls(one, 60)).toBe(0)
    }))

  it.scoped("spread over three processes on one store, no more calls are admitted than the limits allow", () =>
    Effect.gen(function*() {
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            fc.integer({ min: 1, max: 400 }),
            fc.integer({ min: 100, max: 20_000 }),
            fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 400 })), {
              minLength: 1,
              maxLength: 400,
              size: "max"
            }),
            (rpm, tpm, calls) =>
              Effect.runPromise(Effect.scoped(Effect.gen(function*() {
                const store = yield* sharedStore
                const limiters = [yield* limiterOn(store), yield* limiterOn(store), yield* limiterOn(store)]
                const caller = key({ rpm, tpm })
                let requests = 0
                let tokens = 0
                for (const [process, estimate, used] of calls) {
                  const exit = yield* Effect.exit(Effect.scoped(limiters[process]!.admit(caller, estimate)))
                  if (exit._tag === "Failure") continue
                  requests++
                  tokens += used
                  yield* exit.value.settle(used)
                }
                // A clock that does not move refills nothing: the limits are the whole budget.
                expect(requests).toBeLessThanOrEqual(rpm)
                // A call may use more than its estimate, which leaves the bucket in debt and refuses the next
                // ones; so each process can go past the limit by at most one call's overrun.
                const overrun = Math.max(0, ...calls.map(([, estimate, used]) => used - Math.min(estimate, tpm)))
                expect(tokens).toBeLessThanOrEqual(tpm + 3 * overrun)
              })).pipe(Effect.provide(TestContext.TestContext)))
          ),
          { numRuns: 40 }
        )
      )
    }))

  it.scoped("an account's idle permits are kept for its next calls up to a sixteenth of its cap, and given back when it idles", () =>
    Effect.gen(function*() {
      const { ops, store } = counting(yield* sharedStore)
      const [one, other] = [yield* limiterOn(store), yield* limiterOn(store)]
      const caller = key({ concurrency: 32 }, "acct_permits")
      for (let i = 0; i < 50; i++) yield* Effect.scoped(one.admit(caller, 0))
      expect(ops.permits).toBe(1)
      // The other process can have 31 at once while the first keeps one idle; 32 once it gave it back.
      const scope = yield* Scope.make()
      for (let i = 0; i < 31; i++) yield* Scope.extend(other.admit(caller, 0), scope)
      yield* Effect.flip(Effect.scoped(other.admit(caller, 0)))
      yield* TestClock.adjust(SWEEP_MS * (IDLE_SWEEPS + 1) + 100)
      yield* Scope.extend(other.admit(caller, 0), scope)
      yield* Effect.flip(Effect.scoped(one.admit(caller, 0)))
      yield* Scope.close(scope, Exit.void)
    }))

  it.scoped("a changed cap gives back the permits kept idle under the old one: the next call asks the store", () =>
    Effect.gen(function*() {
      const { ops, store } = counting(yield* sharedStore)
      const limiter = yield* limiterOn(store)
      const before = key({ concurrency: 32 }, "acct_changed")
      for (let i = 0; i < 10; i++) yield* Effect.scoped(limiter.admit(before, 0))
      expect(ops.permits).toBe(1)
      yield* Effect.scoped(limiter.admit({ ...before, concurrency: 16 }, 0))
      // One store step: the idle permit given back, then one asked for under the new cap.
      expect(ops.permits).toBe(2)
      yield* Effect.scoped(limiter.admit({ ...before, concurrency: 16 }, 0))
      expect(ops.permits).toBe(2)
    }))

  it.scoped("under a cap of 16 no permit is kept idle: every call asks the store", () =>
    Effect.gen(function*() {
      const { ops, store } = counting(yield* sharedStore)
      const limiter = yield* limiterOn(store)
      const caller = key({ concurrency: 15 }, "acct_small")
      for (let i = 0; i < 10; i++) yield* Effect.scoped(limiter.admit(caller, 0))
      // Each call asks; its release goes with the next call's ask.
      expect(ops.permits).toBeGreaterThanOrEqual(10)
    }))
})
