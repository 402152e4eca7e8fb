/**
 * Agent runs at the edge: the run record as JSON with the billing headers,
 * made once per `Idempotency-Key` like a chat call; the deprecated
 * `/v1/agents/{agentId}/chat` is the same run with its deprecation headers.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AgentRuns, type RunRequest, type RunResult } from "../../services/AgentRuns.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import { AppConfig } from "../../services/Config.ts"
import { Idempotency } from "../../services/Idempotency.ts"
import type { RunRecord } from "../api/AgentRecords.ts"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { billingHeaders } from "../http/billingHeaders.ts"
import { idempotencyKeyOf, jsonOnce } from "../http/idempotent.ts"

export const toRunRecord = (run: RunResult): typeof RunRecord.Type => ({
  id: run.id,
  agent_id: run.agentId,
  conversation_id: run.conversationId,
  output: run.output,
  sources: run.sources.map((source) => ({
    documentId: source.documentId,
    chunkId: source.chunkId,
    score: source.score,
    title: source.title,
    text: source.text
  })),
  usage: { input_tokens: run.usage.inputTokens, output_tokens: run.usage.outputTokens },
  route: run.route,
  privacy: run.privacy,
  receipt_id: run.receipt.id
})

export const AgentRunsHandlers = HttpApiBuilder.group(Api, "agentRuns", (handlers) =>
  Effect.gen(function*() {
    const runs = yield* AgentRuns
    const idempotency = yield* Idempotency
    const sunset = (yield* AppConfig).file.agents.legacyChatSunset
    const deprecation = { deprecation: "true", sunset, link: "</v1/agents/runs>; rel=\"successor-version\"" }

    const answer = (principal: Principal, request: RunRequest, idempotencyKey: string | undefined, extra: Record<string, string>) => {
      const key = idempotencyKeyOf(principal, idempotencyKey, "/v1/agents/runs", request)
      const run = Effect.map(runs.run(principal, request), (result) => ({
        status: 200,
        headers: { ...billingHeaders(result.receipt), ...extra },
        body: toRunRecord(result) as unknown
      }))
      return jsonOnce(key, run).pipe(Effect.provideService(Idempotency, idempotency))
    }

    return handlers
      .handle("createRun", ({ headers, payload }) =>
        Effect.flatMap(CurrentPrincipal, (principal) => answer(principal, payload, headers["idempotency-key"], {})))
      .handle("legacyAgentChat", ({ headers, path, payload }) =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          answer(principal, { agent: path.agentId, ...payload }, headers["idempotency-key"], deprecation)))
  }))
