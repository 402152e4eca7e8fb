/**
 * Agent runs at the edge: the run record as JSON with the billing headers,
 * made once per `Idempotency-Key` like a chat call; the deprecated
 * `/v1/agents/{agentId}/chat` is the same run with its deprecation headers.
 */
import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { AgentRuns, type RunRequest } from "../../services/AgentRuns.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import { AppConfig } from "../../services/Config.ts"
import { Idempotency } from "../../services/Idempotency.ts"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { billingHeaders } from "../http/billingHeaders.ts"
import { idempotencyKeyOf, jsonOnce } from "../http/idempotent.ts"
import { runEventsResponse } from "../http/runEvents.ts"
import { toRunRecord } from "./runRecord.ts"

export const AgentRunsHandlers = HttpApiBuilder.group(Api, "agentRuns", (handlers) =>
  Effect.gen(function*() {
    const runs = yield* AgentRuns
    const idempotency = yield* Idempotency
    const sunset = (yield* AppConfig).file.agents.legacyChatSunset
    const deprecation = { deprecation: "true", sunset, link: "</v1/agents/runs>; rel=\"successor-version\"" }

    const answer = (
      principal: Principal,
      request: RunRequest,
      options: { readonly stream: boolean; readonly idempotencyKey: string | undefined; readonly headers: Record<string, string> }
    ) => {
      const extra = options.headers
      if (options.stream) {
        // Streamed runs are not kept for replay: a retry with the same key runs again.
        return Effect.map(runs.stream(principal, request), ({ events, receiptId }) =>
          HttpServerResponse.setHeaders(runEventsResponse(events), { "x-svc-receipt-id": receiptId, ...extra }))
      }
      const key = idempotencyKeyOf(principal, options.idempotencyKey, "/v1/agents/runs", request)
      const run = Effect.map(runs.run(principal, request), (result) => ({
        status: 200,
        headers: { ...billingHeaders(result.receipt), ...extra },
        body: toRunRecord(result) as unknown
      }))
      return jsonOnce(idempotency, key, run)
    }

    return handlers
      .handle("createRun", ({ headers, payload, urlParams }) =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          answer(principal, payload, { stream: urlParams.stream === true, idempotencyKey: headers["idempotency-key"], headers: {} })))
      .handle("legacyAgentChat", ({ headers, path, payload, urlParams }) =>
        Effect.gen(function*() {
          // On every answer of the deprecated path, refusals included.
          yield* HttpApp.appendPreResponseHandler((_, response) => Effect.succeed(HttpServerResponse.setHeaders(response, deprecation)))
          const principal = yield* CurrentPrincipal
          return yield* answer(principal, { agent: path.agentId, ...payload }, {
            stream: urlParams.stream === true,
            idempotencyKey: headers["idempotency-key"],
            headers: {}
          })
        }))
  }))
