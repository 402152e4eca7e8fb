/**
 * Calling upstreams with failover (failover.ts) under the configured retry
 * policy and the shared deployment health; streams open on their first chunk
 * with content (openStream.ts). Each route is asked for at most the output its
 * hold reserved (outputCap.ts). Each call gets its deadline when it starts,
 * and each attempt its provider's `timeoutMs` within it (deadline.ts).
 */
import { Effect, Layer } from "effect"
import { AppConfig } from "../../services/Config.ts"
import { Health } from "../../services/Health.ts"
import { Upstream } from "../../services/Upstream.ts"
import { callDeadline, completeWithin, deadlineFrom } from "./deadline.ts"
import { firstThatAnswers } from "./failover.ts"
import { openStream } from "./openStream.ts"
import { cappedFor } from "./outputCap.ts"
import { clockOf, stage, stageSpan } from "../telemetry/stageSpan.ts"

const JSON_STAGE = { "svc.stream": false }

export const UpstreamLive = Layer.effect(
  Upstream,
  Effect.gen(function*() {
    const health = yield* Health
    const routing = (yield* AppConfig).file.routing
    const policy = { ...routing.retry, faultCooldownSeconds: routing.health.cooldownSeconds }

    return Upstream.of({
      // Made when the stage runs, on its fiber's clock: the deadline, the first try and its request with no step between.
      complete: (targets, request) =>
        stage("svc.upstream", (fiber) => {
          const clock = clockOf(fiber)
          const deadline = deadlineFrom(clock, routing.deadline)
          return firstThatAnswers(targets, { ...policy, deadlineAt: deadline.deadlineAt, clock }, health, ({ deployment, outputTokens }) =>
            completeWithin(
              deployment.adapter,
              { request: cappedFor(request, outputTokens), upstreamModel: deployment.upstreamModel },
              deployment.provider.timeoutMs,
              deadline,
              clock
            ))
        }, JSON_STAGE),
      stream: (targets, request) =>
        Effect.flatMap(Effect.scope, (scope) =>
          Effect.flatMap(callDeadline(routing.deadline), (deadline) =>
            firstThatAnswers(targets, { ...policy, deadlineAt: deadline.deadlineAt }, health, (target) =>
              openStream(cappedFor(request, target.outputTokens), scope, deadline)(target)))).pipe(
            stageSpan("svc.upstream", { "svc.stream": true })
          ),
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
