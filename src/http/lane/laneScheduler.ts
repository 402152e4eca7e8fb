/**
 * The scheduler of the chat lane's call fibers: Effect's default one, asked
 * whether to yield without reading two fiber refs on every step. The default
 * asks `currentMaxOpsBeforeYield` on each of a call's ~130 steps
 * (docs/performance.md, item 93); nothing in a call sets it or the scheduling
 * priority, so a call yields as under the default: after 2,048 steps in a row,
 * at the default priority, its tasks run by the default scheduler.
 */
import { Effect, FiberRef, Scheduler } from "effect"

/** Effect's defaults, read once: `currentMaxOpsBeforeYield` (2,048) and the scheduling priority (0). */
const STEPS_BEFORE_YIELD = Effect.runSync(FiberRef.get(FiberRef.currentMaxOpsBeforeYield))
const PRIORITY = Effect.runSync(FiberRef.get(FiberRef.currentSchedulingPriority))

export const laneScheduler: Scheduler.Scheduler = {
  shouldYield: (fiber) => fiber.currentOpCount > STEPS_BEFORE_YIELD ? PRIORITY : false,
  scheduleTask: (task, priority, fiber) => Scheduler.defaultScheduler.scheduleTask(task, priority, fiber)
}
