/**
 * The start and the dead end of a chat call, shared by chat completions and
 * agent runs: admission then the route (a call the privacy policy refuses is
 * recorded as such), and, when every route failed, the routing events
 * recorded before the caller's error.
 */
import { Effect, Exit } from "effect"
import type { Admission, AdmittedChat } from "../../services/Admission.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import type { CallRecorder } from "../../services/CallRecorder.ts"
import type { ChatRequest } from "../../services/Chat.ts"
import type { Route, RoutePlanner } from "../../services/RoutePlanner.ts"
import type { RoutesFailed } from "../../services/Upstream.ts"
import { isAnswered, mapAtOnce, thenAtOnce } from "../../services/atOnce.ts"
import type { StageFiber } from "../telemetry/stageSpan.ts"
import { routesFailedError } from "../upstream/upstreamErrors.ts"

export interface CallStages {
  readonly admission: Admission["Type"]
  readonly planner: RoutePlanner["Type"]
  readonly recorder: CallRecorder["Type"]
}

/**
 * Admits `sent` and plans its route. `reservedInput` tokens are planned for beyond the request's
 * own (an agent run's knowledge, retrieved only once the run is held for). Given `fiber`, the one
 * the caller runs a step of now, both stages are made when called, in that step, and a call they
 * admit and route at once is an Exit (services/atOnce.ts): every chat completion runs it.
 */
export const plannedCall = (
  stages: CallStages,
  sent: ChatRequest,
  principal: Principal,
  reservedInput = 0,
  fiber?: StageFiber
) =>
  thenAtOnce(stages.admission.chat(sent, principal, fiber), (call) => {
    const planned = stages.planner.plan(reservedInput === 0 ? call : { ...call, inputTokens: call.inputTokens + reservedInput }, fiber)
    const route = isAnswered(planned) && Exit.isSuccess(planned) ? planned : Effect.tapError(planned, (error) =>
      error._tag === "PrivacyClassUnavailable" || error._tag === "RuntimeUnavailable"
        ? stages.recorder.rejected(principal, sent.model, error)
        : Effect.void)
    return mapAtOnce(route, (route) => ({ call, route }))
  })

/** Every route failed: the routing events still tell the story; then the caller's error. */
export const routesFailed = (recorder: CallRecorder["Type"], call: AdmittedChat, route: Route) => (routes: RoutesFailed) =>
  Effect.zipRight(recorder.routesFailed(call.principal, route, routes.attempts), routesFailedError(routes))
