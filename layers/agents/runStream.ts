/**
 * A streamed agent run: `Created` (the ids), `Sources`, a `Delta` per piece
 * of the answer, then `Completed` with the whole run — settled before it is
 * told, so its usage is what was billed. The run is settled once however its
 * stream ends: done, failed after the model started (the caller then gets the
 * error after a receipt for what was delivered), or cut by a client that
 * left; the turns are kept with the settlement. A run whose model failed
 * before generating anything bills nothing, and a conversation it started is
 * given back.
 */
import { Effect, Stream } from "effect"
import type { RunEvent, RunResult, StreamedRun } from "../../services/AgentRuns.ts"
import { estimatedUsage, toldUsage } from "../gateway/chatSettlement.ts"
import type { CompletionServices } from "../gateway/completionEnd.ts"
import { routesFailed } from "../gateway/plannedCall.ts"
import { settleStream } from "../gateway/streamSettlement.ts"
import { StreamRelay } from "../gateway/streamRelay.ts"
import { toApiError } from "../upstream/upstreamErrors.ts"
import { discardNew, ground, keepTurns, type PreparedRun, type RunServices } from "./runPreparation.ts"

export const streamRun = (services: RunServices & CompletionServices, run: PreparedRun, endpoint: string) =>
  Effect.gen(function*() {
    const hold = yield* services.billing.hold(run.principal, run.amount)
    const { admitted, before, conversation, sources } = yield* ground(services, run)
    const { route } = run
    const answered = yield* services.upstream.stream(route.targets, admitted.request).pipe(
      Effect.catchAll(routesFailed(services.recorder, admitted, route)),
      Effect.onError(() => discardNew(services, run, conversation))
    )
    const firstChunkMs = performance.now() - answered.startedAt
    const { deployment, model } = answered.target
    const privacy = services.privacyPolicy.block(route.privacy.served, deployment)
    const relay = new StreamRelay({
      id: services.ids.completion(),
      model: model.id,
      privacy,
      wantsUsage: false,
      // The answer is gathered whatever the class: it is the run's output (kept as a turn only at standard_route).
      keepsText: true,
      told: toldUsage(estimatedUsage(admitted, answered.target), model)
    })
    const settle = settleStream(services, { admitted, route, hold }, answered, relay, firstChunkMs, {
      endpoint,
      before
    }).pipe(
      Effect.flatMap((receipt) =>
        receipt === undefined
          ? Effect.as(discardNew(services, run, conversation), undefined)
          : Effect.map(
            keepTurns({ ...services, newMessageId: () => services.ids.make("msg") }, run, conversation, relay.content, receipt.id),
            (messageId): RunResult => ({
              id: messageId,
              agentId: run.agent.id,
              conversationId: conversation.id,
              output: relay.content,
              sources,
              usage: { inputTokens: receipt.usage.inputTokens, outputTokens: receipt.usage.outputTokens },
              route: { tier: receipt.tier, model: receipt.model },
              privacy,
              receipt
            })
          )
      ),
      Effect.uninterruptible
    )
    // Once, whichever end comes first: the last event, a failure, or the client leaving.
    const finish = yield* Effect.cached(settle)

    const opening: ReadonlyArray<RunEvent> = [
      { _tag: "Created", agentId: run.agent.id, conversationId: conversation.id, receiptId: hold.id },
      { _tag: "Sources", sources }
    ]
    const deltas = relay.relay(answered.value, toApiError(deployment)).pipe(
      Stream.map((chunk) => chunk.choices[0]?.delta.content ?? ""),
      Stream.filter((text) => text !== ""),
      Stream.map((text): RunEvent => ({ _tag: "Delta", text }))
    )
    const completed = Stream.fromEffect(finish).pipe(
      Stream.flatMap((result) => (result === undefined ? Stream.empty : Stream.succeed<RunEvent>({ _tag: "Completed", result })))
    )
    const streamed: StreamedRun = {
      receiptId: hold.id,
      events: Stream.fromIterable(opening).pipe(
        Stream.concat(deltas),
        Stream.concat(completed),
        Stream.ensuring(finish)
      )
    }
    return streamed
  })
