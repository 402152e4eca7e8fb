/**
 * The group-commit helper: one batch per key in flight, the rest batched behind it; an item sent
 * without waiting lingers for the key's next submitted one, else goes alone, or when the scope closes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope, TestClock } from "effect"
import { makeSerialBatches } from "../layers/storage/serialBatches.ts"

describe("serial batches", () => {
  it.scoped("runs an idle key at once and batches what arrives while it runs", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      const batches: Array<{ key: string; items: ReadonlyArray<number> }> = []
      const batcher = yield* makeSerialBatches<number, number, string>(
        (key, items) =>
          Effect.gen(function*() {
            batches.push({ key, items })
            if (batches.length === 1) {
              yield* Deferred.succeed(started, undefined)
              yield* Deferred.await(gate)
            }
            return items.map((n) => n % 2 === 0 ? Exit.succeed(n * 10) : Exit.fail(`odd ${n}`))
          }),
        3
      )
      const first = yield* Effect.fork(Effect.either(batcher.submit("a", 2)))
      yield* Deferred.await(started)
      expect(batches).toEqual([{ key: "a", items: [2] }])
      // While "a" is busy, its calls wait; another key runs on its own.
      const rest = yield* Effect.fork(
        Effect.all([3, 4, 5, 6, 8].map((n) => Effect.either(batcher.submit("a", n))), { concurrency: "unbounded" })
      )
      // Let their fibers reach the queue (a turn of the event loop is more than enough).
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
      // An idle key runs in the caller's fiber, at once.
      const other = yield* batcher.submit("b", 12)
      expect(other).toBe(120)
      yield* Deferred.succeed(gate, undefined)
      const results = [yield* Fiber.join(first), ...(yield* Fiber.join(rest))]
      expect(results.map((result) => result._tag === "Right" ? result.right : result.left)).toEqual(
        [20, "odd 3", 40, "odd 5", 60, 80]
      )
      expect(batches).toEqual([
        { key: "a", items: [2] },
        { key: "b", items: [12] },
        { key: "a", items: [3, 4, 5] },
        { key: "a", items: [6, 8] }
      ])
    }))

  it.scoped("fails every call of a batch whose run fails, and keeps serving the key", () =>
    Effect.gen(function*() {
      let calls = 0
      const batcher = yield* makeSerialBatches<number, number, never>(
        (_key, items) => {
          calls += 1
          return calls === 1 ? Effect.dieMessage("database gone") : Effect.succeed(items.map((n) => Exit.succeed(n)))
        },
        10
      )
      const failed = yield* Effect.exit(batcher.submit("a", 1))
      expect(Exit.isFailure(failed) && Exit.isInterrupted(failed) === false).toBe(true)
      expect(yield* batcher.submit("a", 2)).toBe(2)
    }))

  it.scoped("fails every call of a batch whose run fails with an error, with that error", () =>
    Effect.gen(function*() {
      const batcher = yield* makeSerialBatches<number, number, string>(
        (_key, items) => items.includes(1) ? Effect.fail("store away") : Effect.succeed(items.map((n) => Exit.succeed(n))),
        10
      )
      expect(yield* Effect.flip(batcher.submit("a", 1))).toBe("store away")
      expect(yield* batcher.submit("a", 2)).toBe(2)
    }))

  it.effect("a sent item lingers for the key's next submitted one, goes alone once its linger ends, and goes when the scope closes", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      const scope = yield* Scope.make()
      // A batch with item 6 stays in flight until the gate opens.
      const gate = yield* Deferred.make<void>()
      const batcher = yield* Scope.extend(
        makeSerialBatches<number, number, never>(
          (_key, items) =>
            Effect.sync(() => batches.push(items)).pipe(
              Effect.zipRight(items.includes(6) ? Deferred.await(gate) : Effect.void),
              Effect.as(items.map((n) => Exit.succeed(n)))
            ),
          10,
          50
        ),
        scope
      )
      yield* batcher.send("a", 1)
      yield* batcher.send("a", 2)
      expect(batches).toEqual([])
      // The next submitted item takes them along, after them.
      expect(yield* batcher.submit("a", 3)).toBe(3)
      expect(batches).toEqual([[1, 2, 3]])
      yield* batcher.send("a", 4)
      yield* TestClock.adjust(49)
      expect(batches).toHaveLength(1)
      yield* TestClock.adjust(1)
      expect(batches).toEqual([[1, 2, 3], [4]])
      // Sent while the key's batch is in flight, an item lingers after it too, rather than going alone.
      const held = yield* Effect.fork(batcher.submit("a", 6))
      while (batches.length < 3) yield* Effect.yieldNow()
      yield* batcher.send("a", 7)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(held)
      expect(batches).toEqual([[1, 2, 3], [4], [6]])
      expect(yield* batcher.submit("a", 8)).toBe(8)
      expect(batches).toEqual([[1, 2, 3], [4], [6], [7, 8]])
      yield* batcher.send("b", 5)
      yield* Scope.close(scope, Exit.void)
      expect(batches).toEqual([[1, 2, 3], [4], [6], [7, 8], [5]])
    }))

  it.effect("an item sent after an earlier linger ended early lingers its own full time", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      const batcher = yield* makeSerialBatches<number, number, never>(
        (_key, items) => Effect.as(Effect.sync(() => batches.push(items)), items.map((n) => Exit.succeed(n))),
        10,
        50
      )
      // Item 1's linger would end at 50 ms; the submitted item 2 takes it along at 20 ms.
      yield* batcher.send("a", 1)
      yield* TestClock.adjust(20)
      expect(yield* batcher.submit("a", 2)).toBe(2)
      expect(batches).toEqual([[1, 2]])
      // Item 3 lingers from 30 ms: the end of item 1's wait, at 50 ms, does not send it.
      yield* TestClock.adjust(10)
      yield* batcher.send("a", 3)
      yield* TestClock.adjust(49)
      expect(batches).toEqual([[1, 2]])
      yield* TestClock.adjust(1)
      expect(batches).toEqual([[1, 2], [3]])
    }).pipe(Effect.scoped))
})
