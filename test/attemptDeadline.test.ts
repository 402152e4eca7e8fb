/**
 * An attempt's deadline (layers/upstream/deadline.ts `endingBy`) on the live
 * clock, where a plain timer watches the attempt's fiber: work that ends in
 * time gives its own exit, failures included, and leaves no timer behind;
 * work that outlasts its end is interrupted (its finalizers have run when
 * the timeout is seen) and fails as a `timeout`; a caller that is
 * interrupted interrupts the work; and under a `TestClock` the deadline
 * follows the test's time. A stream's watchdog (`watchedPulls`) on the live
 * clock is a timer too, and its stream's release clears it. A whole
 * completion (`completeWithin`) is timed by an adapter that keeps the
 * deadline itself on the live clock, by `endingBy` otherwise.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Clock, Deferred, Effect, Exit, Fiber, Option, Stream, TestClock } from "effect"
import { type CallDeadline, completeWithin, endingBy, watchedPulls } from "../layers/upstream/deadline.ts"
import type { ChatRequest } from "../services/Chat.ts"
import { type ProviderAdapter, type UpstreamCall, UpstreamFailure } from "../services/Providers.ts"

/**
 * Runs `effect` with `setTimeout` and `clearTimeout` watched, and gives its value with the timers it set
 * that have neither fired nor been cleared. Only the effect's own timers count: the test runner's and
 * earlier tests' come and go meanwhile. So do the scheduler's turns (`setTimeout(0)` when a busy
 * fiber yields, as it may on a loaded machine): only timers of a second or more count, as every
 * deadline's does.
 */
const pendingTimersOf = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const pending = new Set<unknown>()
      const set = globalThis.setTimeout
      const clear = globalThis.clearTimeout
      globalThis.setTimeout = ((callback: (...args: Array<unknown>) => void, ms?: number, ...args: Array<unknown>) => {
        const timer = set((...given: Array<unknown>) => {
          pending.delete(timer)
          callback(...given)
        }, ms, ...args)
        if ((ms ?? 0) >= 1000) pending.add(timer)
        return timer
      }) as typeof setTimeout
      globalThis.clearTimeout = ((timer: Parameters<typeof clearTimeout>[0]) => {
        pending.delete(timer)
        clear(timer)
      }) as typeof clearTimeout
      return { pending, restore: () => Object.assign(globalThis, { setTimeout: set, clearTimeout: clear }) }
    }),
    ({ pending }) => Effect.map(effect, (value) => ({ value, pending: pending.size })),
    ({ restore }) => Effect.sync(restore)
  )

/** `endingBy` and `completeWithin` on the fiber's clock (the live one, or the test's), as the gateway reads it. */
const endingByNow = <A, E, R>(effect: Effect.Effect<A, E, R>, endAt: number) =>
  Effect.clockWith((clock) => endingBy(effect, endAt, clock))
const completeWithinNow = (adapter: ProviderAdapter, call: UpstreamCall, timeoutMs: number, deadline: CallDeadline) =>
  Effect.clockWith((clock) => completeWithin(adapter, call, timeoutMs, deadline, clock))

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

describe("endingBy, on the live clock", () => {
  it.live("gives the work's value, and its failure, when it ends in time", () =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      expect(yield* endingByNow(Effect.as(Effect.sleep(5), "answered"), now + 1_000)).toBe("answered")
      const refused = new UpstreamFailure({ kind: "status", status: 503, detail: "upstream answered 503" })
      expect(failureOf(yield* Effect.exit(endingByNow(Effect.fail(refused), now + 1_000)))).toBe(refused)
    }))

  it.live("leaves no timer behind once the work ended, nor once a stream's pulls were released", () =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const ended = yield* pendingTimersOf(endingByNow(Effect.sleep(5), now + 60_000))
      expect(ended.pending).toBe(0)
      let left = 3
      const pull = Effect.suspend(() => (left-- > 0 ? Effect.succeed(Chunk.of(left)) : Effect.fail(Option.none<UpstreamFailure>())))
      const read = yield* pendingTimersOf(Stream.runCollect(watchedPulls(Effect.succeed(pull), now + 60_000, 30_000)))
      expect(Chunk.toReadonlyArray(read.value)).toEqual([2, 1, 0])
      expect(read.pending).toBe(0)
    }))

  it.live("counts a timer that is left pending", () =>
    Effect.gen(function*() {
      const left = yield* pendingTimersOf(Effect.sync(() => setTimeout(() => undefined, 60_000)))
      clearTimeout(left.value)
      expect(left.pending).toBe(1)
    }))

  it.live("interrupts work that outlasts its end, then fails as a timeout", () =>
    Effect.gen(function*() {
      let released = false
      const now = yield* Clock.currentTimeMillis
      const work = Effect.onInterrupt(Effect.never, () => Effect.sync(() => void (released = true)))
      const exit = yield* Effect.exit(endingByNow(work, now + 30))
      expect(failureOf(exit)).toMatchObject({ kind: "timeout" })
      expect(released).toBe(true)
    }))

  it.live("interrupts the work when its caller is interrupted", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const released = yield* Deferred.make<void>()
      const now = yield* Clock.currentTimeMillis
      const work = Effect.onInterrupt(Effect.zipRight(Deferred.succeed(started, undefined), Effect.never), () =>
        Deferred.succeed(released, undefined))
      const caller = yield* Effect.fork(endingByNow(work, now + 60_000))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(caller)
      expect(yield* Deferred.isDone(released)).toBe(true)
    }))
})

describe("endingBy, on the test clock", () => {
  it.effect("times out when the test's time passes the end, not before", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.exit(endingByNow(Effect.never, 1_000)))
      yield* TestClock.adjust(999)
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      expect(failureOf(yield* Fiber.join(fiber))).toMatchObject({ kind: "timeout" })
    }))
})

describe("completeWithin", () => {
  /** An adapter whose completion never ends, and the calls it was given. */
  const stuck = (keepsDeadline: boolean) => {
    const calls: Array<UpstreamCall> = []
    const adapter: ProviderAdapter = {
      keepsDeadline,
      complete: (call) => Effect.zipRight(Effect.sync(() => calls.push(call)), Effect.never),
      stream: () => Effect.never
    }
    return { adapter, calls }
  }
  const call: UpstreamCall = { request: { model: "m", messages: [] } as unknown as ChatRequest, upstreamModel: "up" }

  it.live("tells an adapter that keeps the deadline when to end, and leaves the rest to it", () =>
    Effect.gen(function*() {
      const { adapter, calls } = stuck(true)
      const now = yield* Clock.currentTimeMillis
      const fiber = yield* Effect.fork(completeWithinNow(adapter, call, 60_000, { deadlineAt: now + 30_000, streamIdleMs: 1_000 }))
      yield* Effect.sleep(20)
      expect(calls[0]?.deadline?.endAt).toBeGreaterThanOrEqual(now + 30_000)
      expect(calls[0]?.deadline?.endAt).toBeLessThan(now + 31_000)
      // Nobody else watches the time: the attempt is the adapter's to end.
      expect(fiber.unsafePoll()).toBeNull()
      yield* Fiber.interrupt(fiber)
    }))

  it.live("times an adapter that does not keep it, without telling it", () =>
    Effect.gen(function*() {
      const { adapter, calls } = stuck(false)
      const now = yield* Clock.currentTimeMillis
      const exit = yield* Effect.exit(completeWithinNow(adapter, call, 30, { deadlineAt: now + 60_000, streamIdleMs: 1_000 }))
      expect(failureOf(exit)).toMatchObject({ kind: "timeout" })
      expect(calls[0]?.deadline?.endAt).toBeUndefined()
    }))

  it.effect("times every adapter under a test clock, one that keeps the deadline too", () =>
    Effect.gen(function*() {
      const { adapter, calls } = stuck(true)
      const fiber = yield* Effect.fork(Effect.exit(completeWithinNow(adapter, call, 1_000, { deadlineAt: 60_000, streamIdleMs: 1_000 })))
      yield* TestClock.adjust(1_000)
      expect(failureOf(yield* Fiber.join(fiber))).toMatchObject({ kind: "timeout" })
      expect(calls[0]?.deadline?.endAt).toBeUndefined()
    }))
})
