/**
 * The chat lane's scheduler (src/http/lane/laneScheduler.ts) yields as
 * Effect's default one does with the default fiber refs, without reading
 * them: after the same number of steps, at the same priority, so a long
 * call still lets the others run.
 */
import { Effect, Fiber, FiberRef, Scheduler } from "effect"
import { describe, expect, it } from "vitest"
import { laneScheduler } from "../src/http/lane/laneScheduler.ts"

/** A fiber as a scheduler sees it, `steps` into its run, with every fiber ref at its default. */
const fiberAt = (steps: number) =>
  ({ currentOpCount: steps, getFiberRef: <A>(ref: FiberRef.FiberRef<A>) => Effect.runSync(FiberRef.get(ref)) }) as never

describe("the chat lane's scheduler", () => {
  it("answers whether to yield as the default scheduler does with the default fiber refs", () => {
    for (const steps of [0, 1, 2047, 2048, 2049, 5000]) {
      expect(laneScheduler.shouldYield(fiberAt(steps))).toBe(Scheduler.defaultScheduler.shouldYield(fiberAt(steps)))
    }
    expect(laneScheduler.shouldYield(fiberAt(2049))).toBe(0)
  })

  it("lets two long calls take turns", async () => {
    const order: Array<string> = []
    const call = (name: string) => Effect.forEach(Array.from({ length: 6000 }), () => Effect.sync(() => order.push(name)), { discard: true })
    const first = Effect.runFork(call("a"), { scheduler: laneScheduler })
    const second = Effect.runFork(call("b"), { scheduler: laneScheduler })
    await Effect.runPromise(Fiber.join(Fiber.zip(first, second)))
    // Without yielding, every step of the first call would come before any of the second's.
    expect(order.indexOf("b")).toBeLessThan(order.lastIndexOf("a"))
    expect(order.filter((name) => name === "a")).toHaveLength(6000)
  })
})
