/**
 * Stages that can answer at once. A stage that knows its answer when it is
 * called returns it as an `Exit` (`Effect.succeed` and `Effect.void` are
 * Exits), and `thenAtOnce` goes on from it with a plain call, no step of
 * Effect's run loop; an answer still to come is waited for as with
 * `Effect.flatMap`. A chain of such stages runs its common case as plain
 * code (docs/performance.md, item 83). Such a stage does its work when it is
 * called, not when its effect runs: call it where it is to run (inside a
 * `suspend`, a `flatMap` or another stage of the chain), never to keep or
 * retry its effect.
 */
import { type Cause, Effect, Exit } from "effect"

/**
 * Whether an effect is an Exit, an answer already known, as `Exit.isExit` tells: by its tag, without
 * `Exit.isExit`'s check that the value is an Effect at all (four of Predicate's functions on every
 * stage of a call; docs/performance.md, item 94), which its type already says.
 */
export const isAnswered = <A, E, R>(effect: Effect.Effect<A, E, R>): effect is Exit.Exit<A, E> & Effect.Effect<A, E, R> => {
  const tag = (effect as { readonly _tag?: unknown })._tag
  return tag === "Success" || tag === "Failure"
}

/** `next` of the effect's value: called at once when the effect is an Exit already, else once it has run. */
export const thenAtOnce = <A, E, R, B, E2, R2>(
  effect: Effect.Effect<A, E, R>,
  next: (value: A) => Effect.Effect<B, E2, R2>
): Effect.Effect<B, E | E2, R | R2> => {
  if (!isAnswered(effect)) return Effect.flatMap(effect, next)
  return Exit.isSuccess(effect) ? next(effect.value) : (effect as Exit.Exit<never, E>)
}

/** The effect's value through `f`: at once when the effect is an Exit already, else once it has run. */
export const mapAtOnce = <A, E, R, B>(effect: Effect.Effect<A, E, R>, f: (value: A) => B): Effect.Effect<B, E, R> => {
  if (!isAnswered(effect)) return Effect.map(effect, f)
  return Exit.isSuccess(effect) ? Effect.succeed(f(effect.value)) : (effect as Exit.Exit<never, E>)
}

/** The effect's value or its error through `onSuccess` / `onFailure`: at once when the effect is an Exit already. */
export const mapBothAtOnce = <A, E, R, B, E2>(
  effect: Effect.Effect<A, E, R>,
  options: { readonly onFailure: (error: E) => E2; readonly onSuccess: (value: A) => B }
): Effect.Effect<B, E2, R> => {
  if (!isAnswered(effect)) return Effect.mapBoth(effect, options)
  return Exit.mapBoth(effect, options)
}

/**
 * `run` of each item in turn, each whatever the ones before it did (`recover` is given the cause a
 * run failed with, or the defect it threw): a run that answers at once is done with no step of
 * Effect's run loop, and only one still to run is waited for (docs/performance.md, item 96).
 */
export const eachAtOnce = <A>(
  items: ReadonlyArray<A>,
  run: (item: A) => Effect.Effect<unknown>,
  recover: (cause: Cause.Cause<unknown>) => Effect.Effect<void>,
  from = 0
): Effect.Effect<void> => {
  for (let i = from; i < items.length; i++) {
    let ran: Effect.Effect<unknown>
    try {
      ran = run(items[i]!)
    } catch (defect) {
      ran = Exit.die(defect)
    }
    if (isAnswered(ran) && Exit.isSuccess(ran)) continue
    const rest = () => eachAtOnce(items, run, recover, i + 1)
    return Effect.matchCauseEffect(ran, { onFailure: (cause) => Effect.zipRight(recover(cause), Effect.suspend(rest)), onSuccess: rest })
  }
  return Effect.void
}
