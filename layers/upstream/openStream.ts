/**
 * Opening a stream on one route: the adapter's stream, in a scope of its own
 * forked from the call's, counts as answered once a chunk with content came
 * (an empty pull — a keep-alive — is not an answer). A route that fails before
 * that has its scope closed (its upstream request aborted), so the next can be tried.
 * Deadlines (deadline.ts `streamWithin`): the opening and the wait for the
 * first content end by the attempt's end, and every later pull within the
 * idle limit too — timed by the adapter itself when it keeps the deadline,
 * else by one watchdog for the whole stream, whose reader also opens it.
 */
import { type Chunk, Effect, ExecutionStrategy, Exit, Option, Scope } from "effect"
import type { ChatChunk, ChatRequest } from "../../services/Chat.ts"
import type { UpstreamFailure } from "../../services/Providers.ts"
import { originOf, type Pull, pulledStream } from "../../services/pulledStream.ts"
import type { Target } from "../../services/RoutePlanner.ts"
import { attemptEnd, type CallDeadline, streamWithin } from "./deadline.ts"

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

export const openStream = (request: ChatRequest, parent: Scope.Scope, deadline: CallDeadline) => ({ deployment }: Target) =>
  Effect.flatMap(Scope.fork(parent, ExecutionStrategy.sequential), (scope) =>
    Effect.gen(function*() {
      const endAt = yield* attemptEnd(deployment.provider.timeoutMs, deadline)
      // In this route's scope; the wait for the first content is timed like any other.
      const watched = originOf(
        yield* streamWithin(
          deployment.adapter,
          { request, upstreamModel: deployment.upstreamModel },
          scope,
          endAt,
          deadline.streamIdleMs
        )
      )
      // However the call ends, even if the stream is never read: the reader and watchdog stop.
      yield* Scope.addFinalizer(scope, watched.release)
      // The route answered once a chunk with content came, or the stream ended without any.
      const first: Result = yield* watched.pull.pipe(
        Effect.map((chunk): Result => Exit.succeed(chunk)),
        Effect.catchAll(Option.match({ onNone: () => Effect.succeed<Result>(Exit.fail(Option.none())), onSome: Effect.fail }))
      )
      // Only the opening can fail with RequestNotTranslatable, and the first pull has come past it.
      const rest = watched.pull as Pull<ChatChunk, UpstreamFailure>
      return pulledStream(firstThen(first, rest), watched.release)
    }).pipe(Effect.onError(() => Scope.close(scope, Exit.void))))
