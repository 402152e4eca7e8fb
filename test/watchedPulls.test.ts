/**
 * The stream watchdog (layers/upstream/deadline.ts `watchedPulls`), on the
 * test clock: after the first content, a pull that brings nothing for the
 * idle limit fails as a timeout; the opening and the wait for the first
 * content have the attempt's end as their only limit; a pull still waiting
 * at the attempt's end fails, and time the caller spends between pulls
 * (reading slowly) never counts as idle; a pull's own failure, or the
 * opening's, comes through after the items before it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Deferred, Effect, Exit, Fiber, Option, Stream, TestClock } from "effect"
import { watchedPulls } from "../layers/upstream/deadline.ts"
import { UpstreamFailure } from "../services/Providers.ts"

const IDLE = 1_000

const detailOf = (exit: Exit.Exit<unknown, UpstreamFailure>) =>
  Exit.isFailure(exit) ? Option.map(Cause.failureOption(exit.cause), (failure) => `${failure.detail} [${failure.kind}]`).pipe(Option.getOrElse(() => "")) : ""

/** Pulls that answer at once with one item each, `count` times, then end. */
const quickPulls = (count: number) => {
  let left = count
  return Effect.suspend(() =>
    left-- > 0 ? Effect.succeed(Chunk.of(left)) : Effect.fail(Option.none<UpstreamFailure>())
  )
}

/** A pull that brings one item, then nothing ever again. */
const oneThenSilence = () => {
  let pulled = false
  return Effect.suspend(() => (pulled ? Effect.never : (pulled = true, Effect.succeed(Chunk.of(1)))))
}

describe("watchedPulls", () => {
  it.effect("fails a pull that brings nothing within the idle limit, once content came", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Stream.runCollect(watchedPulls(Effect.succeed(oneThenSilence()), 1_000_000, IDLE)))
      yield* TestClock.adjust(IDLE - 1)
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      const exit = yield* Fiber.await(fiber)
      expect(detailOf(exit)).toMatch(/^the stream went idle .*\[timeout\]$/)
    }))

  it.effect("gives the opening and the first content until the attempt's end, not the idle limit", () =>
    Effect.gen(function*() {
      const slowOpening = Effect.as(Effect.sleep(3 * IDLE), Effect.never as Effect.Effect<Chunk.Chunk<number>, Option.Option<UpstreamFailure>>)
      const fiber = yield* Effect.fork(Stream.runCollect(watchedPulls(slowOpening, 6 * IDLE, IDLE)))
      yield* TestClock.adjust(6 * IDLE - 1)
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      expect(detailOf(yield* Fiber.await(fiber))).toMatch(/^the attempt ran out of time .*\[timeout\]$/)
    }))

  it.effect("applies the idle limit from the first content on, however long the opening took", () =>
    Effect.gen(function*() {
      const items: Array<number> = []
      const slowOpening = Effect.as(Effect.sleep(2.5 * IDLE), oneThenSilence())
      const fiber = yield* Effect.fork(Stream.runForEach(watchedPulls(slowOpening, 1_000_000, IDLE), (n) => Effect.sync(() => void items.push(n))))
      yield* TestClock.adjust(2.5 * IDLE)
      expect(items).toEqual([1])
      yield* TestClock.adjust(IDLE - 1)
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      expect(detailOf(yield* Fiber.await(fiber))).toMatch(/^the stream went idle .*\[timeout\]$/)
    }))

  it.effect("fails the first pull with the opening's failure", () =>
    Effect.gen(function*() {
      const refused = Effect.fail(new UpstreamFailure({ kind: "status", status: 503, detail: "busy" }))
      const exit = yield* Effect.exit(Stream.runCollect(watchedPulls(refused, 1_000_000, IDLE)))
      expect(detailOf(exit)).toBe("busy [status]")
    }))

  it.effect("fails a pull still waiting at the attempt's end, before the idle limit", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Stream.runCollect(watchedPulls(Effect.succeed(Effect.never), 300, IDLE)))
      yield* TestClock.adjust(300)
      const exit = yield* Fiber.await(fiber)
      expect(detailOf(exit)).toMatch(/^the attempt ran out of time .*\[timeout\]$/)
    }))

  it.effect("does not count the time the caller takes between pulls", () =>
    Effect.gen(function*() {
      const read = yield* Deferred.make<ReadonlyArray<number>>()
      const slowReader = watchedPulls(Effect.succeed(quickPulls(5)), 1_000_000, IDLE).pipe(
        // Each item takes the caller three idle limits to handle.
        Stream.tap(() => Effect.sleep(3 * IDLE)),
        Stream.runCollect,
        Effect.flatMap((items) => Deferred.succeed(read, Chunk.toReadonlyArray(items)))
      )
      const fiber = yield* Effect.fork(slowReader)
      for (let i = 0; i < 6; i++) yield* TestClock.adjust(3 * IDLE)
      yield* Fiber.join(fiber)
      expect(yield* Deferred.await(read)).toEqual([4, 3, 2, 1, 0])
    }))

  it.effect("passes on the items before a pull's failure, then the failure itself", () =>
    Effect.gen(function*() {
      let pulls = 0
      const failing = Effect.suspend(() =>
        ++pulls <= 2
          ? Effect.succeed(Chunk.of(pulls))
          : Effect.fail(Option.some(new UpstreamFailure({ kind: "connection", detail: "reset" })))
      )
      const items: Array<number> = []
      const exit = yield* Effect.exit(Stream.runForEach(watchedPulls(Effect.succeed(failing), 1_000_000, IDLE), (n) => Effect.sync(() => void items.push(n))))
      expect(items).toEqual([1, 2])
      expect(detailOf(exit)).toBe("reset [connection]")
    }))

  it.scoped("gives what was read for an interrupted pull to the next pull, and skips empty reads", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      let reads = 0
      // An empty read (a keep-alive), then one item once the gate opens, then the end.
      const gated = Effect.suspend(() => {
        reads++
        if (reads === 1) return Effect.succeed(Chunk.empty<number>())
        if (reads === 2) return Effect.as(Deferred.await(gate), Chunk.of(7))
        return Effect.fail(Option.none<UpstreamFailure>())
      })
      const pull = yield* Stream.toPull(watchedPulls(Effect.succeed(gated), 1_000_000, IDLE))
      const first = yield* Effect.fork(pull)
      yield* TestClock.adjust(IDLE / 2)
      yield* Fiber.interrupt(first)
      yield* Deferred.succeed(gate, undefined)
      expect(Chunk.toReadonlyArray(yield* pull)).toEqual([7])
      expect(yield* Effect.flip(pull)).toEqual(Option.none())
    }))
})
