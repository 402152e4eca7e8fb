/**
 * Opening a stream on one route: the adapter's stream, in a scope of its own
 * forked from the call's, counts as answered once a chunk with content came
 * (an empty pull — a keep-alive — is not an answer). A route that fails before
 * that has its scope closed (its upstream request aborted), so the next can be tried.
 * Deadlines (deadline.ts): opening must end by the attempt's end; every later
 * pull within the idle limit and the attempt's end, under one watchdog.
 */
import { Chunk, Effect, ExecutionStrategy, Exit, Option, Scope } from "effect"
import type { ChatChunk, ChatRequest } from "../../services/Chat.ts"
import { pullOf } from "../../services/pulledStream.ts"
import type { Target } from "../../services/RoutePlanner.ts"
import { attemptEnd, type CallDeadline, endingBy, watchedPulls } from "./deadline.ts"

export const openStream = (request: ChatRequest, parent: Scope.Scope, deadline: CallDeadline) => ({ deployment }: Target) =>
  Effect.flatMap(Scope.fork(parent, ExecutionStrategy.sequential), (scope) =>
    Effect.gen(function*() {
      const endAt = yield* attemptEnd(deployment.provider.timeoutMs, deadline)
      const opened = Effect.gen(function*() {
        const chunks = yield* deployment.adapter.stream({ request, upstreamModel: deployment.upstreamModel })
        const pull = yield* pullOf(chunks)
        const first = yield* pull.pipe(
          Effect.repeat({ until: (chunk) => Chunk.isNonEmpty(chunk) }),
          Effect.catchAll(Option.match({
            onNone: () => Effect.succeed(Chunk.empty<ChatChunk>()),
            onSome: (failure) => Effect.fail(failure)
          }))
        )
        return { first, pull }
      })
      const { first, pull } = yield* endingBy(opened, endAt)
      return watchedPulls(pull, endAt, deadline.streamIdleMs, first)
    }).pipe(
      Scope.extend(scope),
      Effect.onError(() => Scope.close(scope, Exit.void))
    ))
