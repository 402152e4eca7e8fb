/**
 * Calling upstreams with failover (failover.ts) under the configured retry
 * policy and the shared deployment health; streams open on their first chunk
 * with content (openStream.ts). Each route is asked for at most the output its
 * hold reserved (outputCap.ts).
 */
import { Effect, Layer } from "effect"
import { AppConfig } from "../../services/Config.ts"
import { Health } from "../../services/Health.ts"
import { Upstream } from "../../services/Upstream.ts"
import { firstThatAnswers } from "./failover.ts"
import { openStream } from "./openStream.ts"
import { cappedFor } from "./outputCap.ts"

export const UpstreamLive = Layer.effect(
  Upstream,
  Effect.gen(function*() {
    const health = yield* Health
    const policy = (yield* AppConfig).file.routing.retry

    return Upstream.of({
      complete: (targets, request) =>
        firstThatAnswers(targets, policy, health, ({ deployment, outputTokens }) =>
          deployment.adapter.complete({ request: cappedFor(request, outputTokens), upstreamModel: deployment.upstreamModel })),
      stream: (targets, request) =>
        Effect.flatMap(Effect.scope, (scope) =>
          firstThatAnswers(targets, policy, health, (target) => openStream(cappedFor(request, target.outputTokens), scope)(target))),
      served: ({ attempts, target }, outcome) =>
        health.record(
          outcome.ok
            ? {
              deployment: target.deployment.id,
              model: target.model.id,
              ok: true,
              latencyMs: outcome.latencyMs,
              outputTokens: outcome.outputTokens,
              attempt: attempts.length,
              ...(outcome.ttftMs !== undefined ? { ttftMs: outcome.ttftMs } : {})
            }
            : {
              deployment: target.deployment.id,
              model: target.model.id,
              ok: false,
              failure: outcome.failure.kind,
              latencyMs: outcome.latencyMs,
              attempt: attempts.length
            }
        )
    })
  })
)
