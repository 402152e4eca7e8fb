/**
 * The stream watchdog (layers/upstream/deadline.ts `watchedPulls`), on the
 * test clock: a pull that brings nothing for the idle limit fails as a
 * timeout, so does one still waiting at the attempt's end, and time the
 * caller spends between pulls (reading slowly) never counts as idle; a
 * pull's own failure comes through after the items before it; a chunk read
 * before the first pull comes out first, whatever the clock.
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

describe("watchedPulls", () => {
  it.effect("fails a pull that brings nothing within the idle limit", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Stream.runCollect(watchedPulls(Effect.never, 1_000_000, IDLE)))
      yield* TestClock.adjust(IDLE - 1)
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      const exit = yield* Fiber.await(fiber)
      expect(detailOf(exit)).toMatch(/^the stream went idle .*\[timeout\]$/)
    }))

  it.effect("fails a pull still waiting at the attempt's end, before the idle limit", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Stream.runCollect(watchedPulls(Effect.never, 300, IDLE)))
      yield* TestClock.adjust(300)
      const exit = yield* Fiber.await(fiber)
      expect(detailOf(exit)).toMatch(/^the attempt ran out of time .*\[timeout\]$/)
    }))

  it.effect("does not count the time the caller takes between pulls", () =>
    Effect.gen(function*() {
      const read = yield* Deferred.make<ReadonlyArray<number>>()
      const slowReader = watchedPulls(quickPulls(5), 1_000_000, IDLE).pipe(
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
      const exit = yield* Effect.exit(Stream.runForEach(watchedPulls(failing, 1_000_000, IDLE), (n) => Effect.sync(() => void items.push(n))))
      expect(items).toEqual([1, 2])
      expect(detailOf(exit)).toBe("reset [connection]")
    }))

  it.effect("hands out the chunk read before its first pull at once, however late, then watches the pulls", () =>
    Effect.gen(function*() {
      const pulled: Array<number> = []
      const items = watchedPulls(quickPulls(2), 300, IDLE, Chunk.make(10, 11))
      // Past the attempt's end before the stream is read: the chunk read before still comes, the pulls time out.
      yield* TestClock.adjust(300)
      const exit = yield* Effect.exit(Stream.runForEach(items, (n) => Effect.sync(() => void pulled.push(n))))
      expect(pulled).toEqual([10, 11])
      expect(detailOf(exit)).toMatch(/^the attempt ran out of time .*\[timeout\]$/)
      const ended: Array<number> = []
      yield* Stream.runForEach(watchedPulls(quickPulls(2), 1_000_000, IDLE, Chunk.make(10)), (n) => Effect.sync(() => void ended.push(n)))
      expect(ended).toEqual([10, 1, 0])
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
      const pull = yield* Stream.toPull(watchedPulls(gated, 1_000_000, IDLE))
      const first = yield* Effect.fork(pull)
      yield* TestClock.adjust(IDLE / 2)
      yield* Fiber.interrupt(first)
      yield* Deferred.succeed(gate, undefined)
      expect(Chunk.toReadonlyArray(yield* pull)).toEqual([7])
      expect(yield* Effect.flip(pull)).toEqual(Option.none())
    }))
})
