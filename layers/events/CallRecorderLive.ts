/**
 * The call recorder on the event log: routing events from the attempts
 * (routeEvents.ts) and the privacy policy's events go with the receipt; a call
 * refused or failed without one has its events recorded here, under the
 * request being served.
 */
import { Effect, FiberRef, Layer } from "effect"
import { currentRequestId } from "../../services/ApiError.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import { CallRecorder } from "../../services/CallRecorder.ts"
import { EventLog } from "../../services/EventLog.ts"
import type { CallEvent } from "../../services/Ledger.ts"
import { routeEvents } from "./routeEvents.ts"

export const CallRecorderLive = Layer.effect(
  CallRecorder,
  Effect.gen(function*() {
    const events = yield* EventLog

    const withoutReceipt = (principal: Principal, callEvents: ReadonlyArray<CallEvent>) =>
      Effect.flatMap(FiberRef.get(currentRequestId), (requestId) =>
        Effect.forEach(callEvents, (event) =>
          events.record({
            type: event.type,
            accountId: principal.accountId!,
            ...(typeof requestId === "string" ? { requestId } : {}),
            data: event.data
          }), { discard: true }))

    return CallRecorder.of({
      receiptEvents: (route, attempts) => {
        const routed = routeEvents(attempts, route)
        return route.privacy.events.length === 0 ? routed : [...routed, ...route.privacy.events]
      },
      rejected: (principal, model, refusal) =>
        withoutReceipt(principal, [{
          type: "privacy.rejected",
          data: {
            model,
            requested: refusal.requested,
            reason: refusal._tag === "RuntimeUnavailable" ? refusal.reason : "not_earnable"
          }
        }]),
      routesFailed: (principal, route, attempts) => withoutReceipt(principal, routeEvents(attempts, route))
    })
  })
)
