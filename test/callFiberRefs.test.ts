/**
 * A chat lane call's fiber refs (src/http/lane/callFiberRefs.ts): the lane
 * runtime's values and scheduler, the call's own, and nothing one call sets
 * seen by the next; a child fiber inherits them and joins its changes back,
 * as after an ordinary fork.
 */
import { Context, Effect, Fiber, FiberRef, Logger, Option, Runtime, Scheduler } from "effect"
import { describe, expect, it } from "vitest"
import { callFiberRefs } from "../src/http/lane/callFiberRefs.ts"

const fromRuntime = FiberRef.unsafeMake("initial")
const own = FiberRef.unsafeMake(0)
class Marker extends Context.Tag("test/Marker")<Marker, string>() {}

/** A scheduler of its own (Effect's default's tasks), so the fiber's can be told from the default. */
const scheduler: Scheduler.Scheduler = {
  shouldYield: (fiber) => Scheduler.defaultScheduler.shouldYield(fiber),
  scheduleTask: (task, priority, fiber) => Scheduler.defaultScheduler.scheduleTask(task, priority, fiber)
}

const logged: Array<string> = []
const laneRuntime = Effect.runSync(
  Effect.runtime<never>().pipe(
    Effect.locally(fromRuntime, "set in the runtime"),
    Effect.provide(Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logged.push(String(message)))))
  )
)
const refs = callFiberRefs(laneRuntime, laneRuntime.runtimeFlags, scheduler)
const runFork = Runtime.runFork(refs.runtime)

/** Runs `effect` as the lane runs a call: its fiber's refs from the template, with `value` as its own. */
const asCall = <A>(effect: Effect.Effect<A>, value: number) =>
  Effect.runPromise(Fiber.join(runFork(effect, {
    updateRefs: (_, fiberId) => refs.refsOf(fiberId, [[own, value], [FiberRef.currentContext, Context.make(Marker, `call ${value}`)]])
  })))

describe("a chat lane call's fiber refs", () => {
  it("hold the runtime's values, its scheduler and logger, and the call's own", async () => {
    const seen = await asCall(
      Effect.all({
        fromRuntime: FiberRef.get(fromRuntime),
        own: FiberRef.get(own),
        scheduler: FiberRef.get(FiberRef.currentScheduler),
        marker: Effect.map(Effect.serviceOption(Marker), Option.getOrUndefined),
        logged: Effect.zipRight(Effect.log("from the call"), Effect.sync(() => logged.includes("from the call")))
      }),
      7
    )
    expect(seen.fromRuntime).toBe("set in the runtime")
    expect(seen.own).toBe(7)
    expect(seen.scheduler).toBe(scheduler)
    expect(seen.marker).toBe("call 7")
    expect(seen.logged).toBe(true)
  })

  it("are set in the call alone, passed to a child fiber and joined back from it", async () => {
    const changed = await asCall(
      Effect.gen(function*() {
        yield* FiberRef.set(own, 8)
        const inChild = yield* Fiber.join(yield* Effect.fork(Effect.zipLeft(FiberRef.get(own), FiberRef.set(own, 9))))
        return { inChild, afterJoin: yield* FiberRef.get(own) }
      }),
      1
    )
    expect(changed).toEqual({ inChild: 8, afterJoin: 9 })
    // The next call starts from the template again: nothing the last one set.
    expect(await asCall(Effect.all([FiberRef.get(own), FiberRef.get(fromRuntime)]), 2)).toEqual([2, "set in the runtime"])
  })
})
