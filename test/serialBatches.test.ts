/** The group-commit helper: one batch per key in flight, the rest batched behind it. */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
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
})
