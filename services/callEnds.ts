/**
 * What a call does at its end, without a finalizer on its scope each: the
 * chat lane gives every call a list of ends (`currentCallEnds`) and runs it
 * as the call's scope closes, so a stage puts its end there in no step of
 * its own (an Exit: services/atOnce.ts), and the scope, left empty, closes
 * without combining its finalizers' exits (docs/performance.md, item 87).
 *
 * Only the call's own scope: a stage running in a narrower one (an
 * `Effect.scoped` inside the call) or without the lane (the app's routes,
 * tests) puts its end on its scope as before, and so does one added once the
 * list has run (the scope, closed then too, runs it at once).
 */
import { type Cause, Context, Effect, Exit, type Fiber, FiberRef, Option, Scope } from "effect"
import { globalValue } from "effect/GlobalValue"
import { eachAtOnce } from "./atOnce.ts"

/** An end is told how the call ended, as a scope's finalizer is. */
export type CallEnd = (exit: Exit.Exit<unknown, unknown>) => Effect.Effect<unknown>

/** A call's ends, for the scope its lane made (ahead of the call); `closed` once they ran. */
export interface CallEnds {
  readonly scope: Scope.CloseableScope
  readonly ends: Array<CallEnd>
  closed: Exit.Exit<unknown, unknown> | undefined
}

export const currentCallEnds = globalValue(
  "svc/currentCallEnds",
  () => FiberRef.unsafeMake<CallEnds | undefined>(undefined)
)

export const emptyCallEnds = (scope: Scope.CloseableScope): CallEnds => ({ scope, ends: [], closed: undefined })

/**
 * `end` run when the fiber's scope closes: added to its call's ends at once when that scope is the
 * call's own (`call`, when the caller looked already), else as a finalizer of the scope.
 */
export const atCallEnd = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  end: CallEnd,
  call = openCallEnds(fiber)
): Effect.Effect<void> => {
  if (call === undefined) {
    const scope = Context.unsafeGet(fiber.currentContext as Context.Context<Scope.Scope>, Scope.Scope)
    return Scope.addFinalizerExit(scope, end)
  }
  call.ends.push(end)
  return Exit.void
}

/** The call's ends, when the fiber runs in the call's own scope and they have not run yet: an end goes there at once. */
export const openCallEnds = (fiber: Fiber.RuntimeFiber<unknown, unknown>): CallEnds | undefined => {
  const call = fiber.getFiberRef(currentCallEnds)
  if (call === undefined || call.closed !== undefined) return undefined
  const scope = Context.getOption(fiber.currentContext as Context.Context<Scope.Scope>, Scope.Scope)
  return Option.isSome(scope) && scope.value === call.scope ? call : undefined
}

const logged = (cause: Cause.Cause<unknown>) => Effect.logError("a call's end failed", cause)

/**
 * Runs the call's ends, the last added first, each whatever the ones before it did (a failure is
 * logged): an end that answers at once (an Exit) takes no step of its own.
 */
export const runCallEnds = (call: CallEnds, exit: Exit.Exit<unknown, unknown>): Effect.Effect<void> =>
  Effect.suspend(() => {
    call.closed = exit
    return eachAtOnce(call.ends.splice(0).reverse(), (end) => end(exit), logged)
  })

/**
 * `Effect.scoped` for an effect that is its fiber's whole life, in the scope of its `ends`, which the
 * caller made beforehand and set as the fiber's context (the chat lane: src/http/lane/freshScopes.ts), where
 * `Effect.scoped` makes one in a step of its own and provides it for a region, restoring the
 * context after it, which costs a call more than the rest of its scope. The call's `ends` (the
 * fiber's `currentCallEnds`) run once the scope is closed: what went on the scope came later than
 * they (the upstream's body, say).
 */
export const inCallScope = (ends: CallEnds) => <A, E>(effect: Effect.Effect<A, E, Scope.Scope>): Effect.Effect<A, E> =>
  Effect.onExit(effect as Effect.Effect<A, E>, (exit) => Effect.zipRight(Scope.close(ends.scope, exit), runCallEnds(ends, exit)))
