/**
 * test/support/layer.ts: a `layer` block's tests run on its layer and its
 * TestClock, and tests collected after the block run on their own fresh test
 * services, not on the block's (which @effect/vitest's own `layer` did, by
 * assigning the block's methods onto Vitest's shared `it`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Context, Effect, Layer, Option, TestClock } from "effect"
import { layer } from "./support/layer.ts"

class Marker extends Context.Tag("test/Marker")<Marker, string>() {}

layer(Layer.succeed(Marker, "block"))("a layer block", (it) => {
  it.effect("runs on the block's layer and moves the block's clock", () =>
    Effect.gen(function*() {
      expect(yield* Marker).toBe("block")
      yield* TestClock.adjust("1000 seconds")
      expect(yield* Clock.currentTimeMillis).toBe(1_000_000)
    }))

  it.effect("shares the block's clock with the block's next test", () =>
    Effect.map(Clock.currentTimeMillis, (now) => expect(now).toBe(1_000_000)))
})

// A describe's body is collected after the file's top level, so after the block's body: where the
// block had left its methods on the shared `it`, this test would run on them.
describe("after the block", () => {
  it.effect("a test starts on a fresh TestClock, without the block's services", () =>
    Effect.gen(function*() {
      expect(yield* Clock.currentTimeMillis).toBe(0)
      expect(Option.isNone(yield* Effect.serviceOption(Marker))).toBe(true)
    }))
})
