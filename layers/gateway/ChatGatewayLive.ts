/**
 * The chat path, composed from its stages (docs/architecture.md):
 *
 *   Admission → RoutePlanner (→ PrivacyPolicy) → Billing.hold → Upstream → Billing.settle → CallRecorder
 *
 * The hold and the upstream request may run at once (Billing.withHoldDuring):
 * nothing is answered before the hold is taken.
 * A failed or abandoned call is not billed: its hold is released when its
 * scope closes. A served JSON call is billed before it is answered, but what
 * its answer does not wait for (the settlement's hand-over to the ledger, the
 * attempt's health, the rate limits' correction) runs as the caller's scope
 * closes, once the answer is written (docs/performance.md, item 73). A
 * stream fails over until its first chunk; after that a
 * failure becomes an SSE error frame and what was delivered is billed. Every
 * response is relabelled with our completion id and the catalogue model id,
 * so nothing the caller sees names the upstream.
 */
import { Effect, Layer } from "effect"
import { Admission, type AdmittedChat } from "../../services/Admission.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import { Billing } from "../../services/Billing.ts"
import { CallRecorder } from "../../services/CallRecorder.ts"
import type { ChatRequest } from "../../services/Chat.ts"
import { ChatGateway } from "../../services/ChatGateway.ts"
import { isDatabaseOutage } from "../../services/DatabaseStatus.ts"
import { Ids } from "../../services/Ids.ts"
import { Pricing } from "../../services/Pricing.ts"
import { PrivacyPolicy } from "../../services/PrivacyPolicy.ts"
import { ensuringPulled } from "../../services/pulledStream.ts"
import { type Route, RoutePlanner } from "../../services/RoutePlanner.ts"
import { Transcripts } from "../../services/Transcripts.ts"
import { Upstream } from "../../services/Upstream.ts"
import { thenAtOnce } from "../../services/atOnce.ts"
import type { StageFiber } from "../telemetry/stageSpan.ts"
import { toApiError } from "../upstream/upstreamErrors.ts"
import { estimatedUsage, toldUsage } from "./chatSettlement.ts"
import { endingBeforeLater } from "./afterAnswer.ts"
import { endCompletion } from "./completionEnd.ts"
import { plannedCall, routesFailed } from "./plannedCall.ts"
import { settleStream } from "./streamSettlement.ts"
import { StreamRelay } from "./streamRelay.ts"

export const ChatGatewayLive = Layer.effect(
  ChatGateway,
  Effect.gen(function*() {
    const admission = yield* Admission
    const planner = yield* RoutePlanner
    const privacyPolicy = yield* PrivacyPolicy
    const billing = yield* Billing
    const upstream = yield* Upstream
    const recorder = yield* CallRecorder
    const transcripts = yield* Transcripts
    const pricing = yield* Pricing
    const ids = yield* Ids
    const services = { billing, recorder, transcripts }
    const streamServices = { ...services, upstream, pricing }
    const completionServices = { ...streamServices, privacyPolicy, ids }

    const stages = { admission, planner, recorder }
    const admitted = (sent: ChatRequest, principal: Principal, fiber?: StageFiber) => plannedCall(stages, sent, principal, 0, fiber)
    const failed = (call: AdmittedChat, route: Route) => routesFailed(recorder, call, route)

    return ChatGateway.of({
      // Admitted and planned in the call's step (its fiber given): no step between the stages.
      complete: (sent, principal) =>
        Effect.withFiberRuntime((fiber) =>
          thenAtOnce(admitted(sent, principal, fiber), ({ call, route }) =>
            billing.withHoldDuring(
              principal,
              route.amount,
              upstream.complete(route.targets, call.request).pipe(Effect.catchAll(failed(call, route))),
              (hold, answered) =>
                // What the answer does not wait for runs as the caller's scope closes: once it is written.
                endingBeforeLater((later, fiber) =>
                  endCompletion(completionServices, { admitted: call, route, hold }, answered, undefined, later, fiber)
                ),
              fiber
            ))),

      stream: (sent, principal) =>
        Effect.gen(function*() {
          const { call, route } = yield* admitted(sent, principal)
          // Held for the caller's scope: a response that is never pulled (the client left first) frees it.
          const [hold, answered] = yield* billing.holdDuring(
            principal,
            route.amount,
            upstream.stream(route.targets, call.request).pipe(Effect.catchAll(failed(call, route)))
          )
          const firstChunkMs = performance.now() - answered.startedAt
          const { deployment, model } = answered.target
          const relay = new StreamRelay({
            id: ids.completion(),
            model: model.id,
            privacy: privacyPolicy.block(route.privacy.served, deployment),
            wantsUsage: call.request.stream_options?.include_usage === true,
            keepsText: transcripts.keeps(route.privacy.served),
            told: toldUsage(estimatedUsage(call, answered.target), model)
          })
          return {
            receiptId: hold.id,
            // However the stream ends, bill what was generated.
            chunks: ensuringPulled(
              relay.relay(answered.value, toApiError(deployment)),
              settleStream(streamServices, { admitted: call, route, hold }, answered, relay, firstChunkMs).pipe(
                // Not dropped silently: an outage is kept by the journal (or the lease frees an unbilled hold).
                Effect.catchAllCause((cause) =>
                  isDatabaseOutage(cause) ? Effect.void : Effect.logError("stream settlement failed", cause)
                )
              )
            )
          }
        })
    })
  })
)
