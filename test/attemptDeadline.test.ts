/**
 * An attempt's deadline (layers/upstream/deadline.ts `endingBy`) on the live
 * clock, where a plain timer watches the attempt's fiber: work that ends in
 * time gives its own exit, failures included, and leaves no timer behind;
 * work that outlasts its end is interrupted (its finalizers have run when
 * the timeout is seen) and fails as a `timeout`; a caller that is
 * interrupted interrupts the work; and under a `TestClock` the deadline
 * follows the test's time. A stream's watchdog (`watchedPulls`) on the live
 * clock is a timer too, and its stream's release clears it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Clock, Deferred, Effect, Exit, Fiber, Option, Stream, TestClock } from "effect"
import { endingBy, watchedPulls } from "../layers/upstream/deadline.ts"
import { UpstreamFailure } from "../services/Providers.ts"

/** Timers this process has pending. */
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

describe("endingBy, on the live clock", () => {
  it.live("gives the work's value, and its failure, when it ends in time", () =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      expect(yield* endingBy(Effect.as(Effect.sleep(5), "answered"), now + 1_000)).toBe("answered")
      const refused = new UpstreamFailure({ kind: "status", status: 503, detail: "upstream answered 503" })
      expect(failureOf(yield* Effect.exit(endingBy(Effect.fail(refused), now + 1_000)))).toBe(refused)
    }))

  it.live("leaves no timer behind once the work ended, nor once a stream's pulls were released", () =>
    Effect.gen(function*() {
      const before = timers()
      const now = yield* Clock.currentTimeMillis
      yield* endingBy(Effect.sleep(5), now + 60_000)
      let left = 3
      const pull = Effect.suspend(() => (left-- > 0 ? Effect.succeed(Chunk.of(left)) : Effect.fail(Option.none<UpstreamFailure>())))
      const items = yield* Stream.runCollect(watchedPulls(Effect.succeed(pull), now + 60_000, 30_000))
      expect(Chunk.toReadonlyArray(items)).toEqual([2, 1, 0])
      expect(timers()).toBe(before)
    }))

  it.live("interrupts work that outlasts its end, then fails as a timeout", () =>
    Effect.gen(function*() {
      let released = false
      const now = yield* Clock.currentTimeMillis
      const work = Effect.onInterrupt(Effect.never, () => Effect.sync(() => void (released = true)))
      const exit = yield* Effect.exit(endingBy(work, now + 30))
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
      const caller = yield* Effect.fork(endingBy(work, now + 60_000))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(caller)
      expect(yield* Deferred.isDone(released)).toBe(true)
    }))
})

describe("endingBy, on the test clock", () => {
  it.effect("times out when the test's time passes the end, not before", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.exit(endingBy(Effect.never, 1_000)))
      yield* TestClock.adjust(999)
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      expect(failureOf(yield* Fiber.join(fiber))).toMatchObject({ kind: "timeout" })
    }))
})
