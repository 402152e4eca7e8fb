/**
 * Opening a stream on one route: the adapter's stream counts as answered once
 * a chunk with content came (an empty pull — a keep-alive — is not an
 * answer). A route that fails before that lets go of its upstream request, so
 * the next can be tried. Deadlines (deadline.ts): the opening and the wait for
 * the first content end by the attempt's end, and every later pull within the
 * idle limit too. An adapter that keeps the deadline times its own waits and
 * is opened at once in the call's scope (no scope of the route's own: that
 * cost a context change per stream); any other is opened by the
 * first pull of one watchdog for the whole stream, in a scope of the route's
 * own that is closed if it fails.
 */
import { type Chunk, Effect, ExecutionStrategy, Exit, Option, Scope } from "effect"
import type { ChatChunk, ChatRequest } from "../../services/Chat.ts"
import type { AdapterFailure, UpstreamFailure } from "../../services/Providers.ts"
import { type Origin, originOf, type Pull, pulledStream, pullOf } from "../../services/pulledStream.ts"
import type { Target } from "../../services/RoutePlanner.ts"
import { attemptEnd, type CallDeadline, keepsOwnDeadline, watchedPulls } from "./deadline.ts"

type Result = Exit.Exit<Chunk.Chunk<ChatChunk>, Option.Option<never>>

/** `first` (a result already read), then the pulls of `pull`. */
const firstThen = (first: Result, pull: Pull<ChatChunk, UpstreamFailure>): Pull<ChatChunk, UpstreamFailure> => {
  let taken = false
  return Effect.suspend(() => {
    if (taken) return pull
    taken = true
    return first
  })
}

/** A route's stream once its first content came (or it ended without any); `abandon` runs if it fails before. */
const answered = (origin: Origin<ChatChunk, AdapterFailure>, abandon: Effect.Effect<void>) =>
  origin.pull.pipe(
    Effect.map((chunk): Result => Exit.succeed(chunk)),
    Effect.catchAll(Option.match({ onNone: () => Effect.succeed<Result>(Exit.fail(Option.none())), onSome: Effect.fail })),
    // Only the opening can fail with RequestNotTranslatable, and the first pull has come past it.
    Effect.map((first) => pulledStream(firstThen(first, origin.pull as Pull<ChatChunk, UpstreamFailure>), origin.release)),
    Effect.onError(() => abandon)
  )

export const openStream = (request: ChatRequest, parent: Scope.Scope, deadline: CallDeadline) => ({ deployment }: Target) =>
  Effect.flatMap(attemptEnd(deployment.provider.timeoutMs, deadline), (endAt) => {
    const { adapter, upstreamModel } = deployment
    const call = { request, upstreamModel }
    const kept = Effect.flatMap(
      adapter.stream({ ...call, deadline: { endAt, streamIdleMs: deadline.streamIdleMs } }),
      // Opened at once in the call's scope (its request is let go of with it, or when this route fails).
      (stream) => {
        const origin = originOf(stream)
        return answered(origin, origin.release)
      }
    )
    // Opened by the watchdog's reader, in a scope of the route's own closed if it fails.
    const watched = Effect.flatMap(Scope.fork(parent, ExecutionStrategy.sequential), (scope) => {
      const opening = Scope.extend(Effect.flatMap(adapter.stream(call), pullOf), scope)
      const origin = originOf(watchedPulls(opening, endAt, deadline.streamIdleMs))
      // However the call ends, even if the stream is never read: the reader and watchdog stop.
      return Effect.zipRight(Scope.addFinalizer(scope, origin.release), answered(origin, Scope.close(scope, Exit.void)))
    })
    return Effect.flatMap(keepsOwnDeadline(adapter), (keeps) => (keeps ? kept : watched))
  })
