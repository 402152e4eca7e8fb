/**
 * A span for one stage of a call (`svc.admission`, `svc.route_plan`,
 * `svc.billing.hold`, `svc.upstream`, `svc.billing.settle`), exported with
 * traces (TracingLive). It takes no stack trace: Effect's default captures one
 * per span as the stage is built, on every call whether traces are exported
 * or not, and the stage's name already says where it is. With the tracer off
 * (the chat lane serves calls that way, see src/http/lane/chatLane.ts) the
 * stage runs without one: `withSpan` would still make a no-op span, end it,
 * and copy the fiber's services to provide it, about 20 µs a stage.
 */
import { Clock, Context, Effect, type Fiber, FiberRef } from "effect"

const NO_STACK = { captureStackTrace: false }

/** The fiber a stage runs in: what it reads of the call (its request id, its record) it reads here, with no step of its own. */
export type StageFiber = Fiber.RuntimeFiber<unknown, unknown>

/** The fiber's clock (a test's `TestClock` too), read with no step, where `Effect.clockWith` takes one. */
export const clockOf = (fiber: StageFiber): Clock.Clock => Context.get(fiber.currentDefaultServices, Clock.Clock)

/**
 * A stage made when it runs, in its span: `make` is called inside the span (with traces on) or in
 * the stage's one step (off), so a stage whose parts answer at once (services/atOnce.ts) does its
 * work there and needs no `suspend` of its own.
 */
export const stage = <A, E, R>(
  name: string,
  make: (fiber: StageFiber) => Effect.Effect<A, E, R>,
  attributes?: Record<string, unknown>
): Effect.Effect<A, E, R> => Effect.withFiberRuntime((fiber) => inStage(fiber, name, make, attributes))

/**
 * `stage`'s work in a step already running in `fiber` (a stage that goes on, at once, to what
 * follows it): `make`'s effect, in the stage's span when traces are on.
 */
export const inStage = <A, E, R>(
  fiber: StageFiber,
  name: string,
  make: (fiber: StageFiber) => Effect.Effect<A, E, R>,
  attributes?: Record<string, unknown>
): Effect.Effect<A, E, R> => {
  if (!fiber.getFiberRef(FiberRef.currentTracerEnabled)) return make(fiber)
  const options = attributes === undefined ? NO_STACK : { attributes, captureStackTrace: false }
  return Effect.withSpan(Effect.suspend(() => make(fiber)), name, options)
}

/**
 * `make` in `fiber` when the caller runs a step of it now (made when called, in that step), else in
 * a step of its own (made when it runs): how a service given its caller's fiber answers at once.
 */
export const inFiberStep = <A, E, R>(
  fiber: StageFiber | undefined,
  make: (fiber: StageFiber) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => fiber === undefined ? Effect.withFiberRuntime(make) : make(fiber)

/** `inStage` in `fiber` when the caller runs a step of it now, else `stage` (made when it runs). */
export const stageOn = <A, E, R>(
  fiber: StageFiber | undefined,
  name: string,
  make: (fiber: StageFiber) => Effect.Effect<A, E, R>,
  attributes?: Record<string, unknown>
): Effect.Effect<A, E, R> => inFiberStep(fiber, (running) => inStage(running, name, make, attributes))

/** An effect already made, as a stage in its span. */
export const stageSpan = (name: string, attributes?: Record<string, unknown>) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => stage(name, () => effect, attributes)
