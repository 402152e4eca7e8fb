/**
 * `Effect.acquireRelease` for a call's own resources, without what makes
 * Effect's costly here: before and after each release, Effect's version
 * restores the fiber refs the resource was acquired with, diffing every fiber
 * ref, the whole service context included, twice. With the app's 48
 * services that cost more CPU than the request such a release aborts
 * (docs/performance.md). Here the release runs with the fiber refs of the
 * fiber that closes the scope, which is the call's own fiber for a call's
 * scope. It takes no services and should read no fiber ref: aborting a
 * request, destroying a body, releasing a hold.
 */
import { Effect, type Exit, Scope } from "effect"

export const acquirePlainRelease = <A, E, R>(
  acquire: Effect.Effect<A, E, R>,
  release: (resource: A, exit: Exit.Exit<unknown, unknown>) => Effect.Effect<unknown>
): Effect.Effect<A, E, R | Scope.Scope> =>
  Effect.uninterruptible(
    Effect.flatMap(Effect.scope, (scope) =>
      Effect.tap(acquire, (resource) => Scope.addFinalizerExit(scope, (exit) => release(resource, exit))))
  )
