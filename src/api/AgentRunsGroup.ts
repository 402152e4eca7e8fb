/**
 * Agent runs (scope `chat`): `POST /v1/agents/runs`, and the deprecated
 * `POST /v1/agents/{agentId}/chat` that answers the same with `Deprecation`,
 * `Sunset` and a `Link` to its successor. A run is billed like a chat call,
 * with one receipt named in `x-svc-receipt-id`.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { RunRequest } from "../../services/AgentRuns.ts"
import { Wire } from "../../services/ApiError.ts"
import { LegacyAgentChat, RunRecord } from "./AgentRecords.ts"
import { IdempotencyHeaders } from "./IdempotencyHeader.ts"
import { withModelCallErrors } from "./modelCallErrors.ts"
import { streamingEndpoint } from "./operationDocs.ts"
import { ChatScope } from "./Security.ts"

/** `?stream=true`: the run as server-sent events. */
const RunParams = Schema.Struct({ stream: Schema.optional(Schema.BooleanFromString) })

const RUN_EVENTS = "With `?stream=true`: server-sent events, each an `event:` line and a `data:` line of JSON, in order: " +
  "`run.created` (agent_id, conversation_id, receipt_id), `sources` (the sources array), `output.delta` ({\"text\"}, " +
  "many), `run.completed` (the AgentRun record), or `error` (the error envelope) when the run fails after its first event."

export class AgentRunsGroup extends HttpApiGroup.make("agentRuns")
  .add(
    HttpApiEndpoint.post("createRun", "/v1/agents/runs")
      .setPayload(RunRequest)
      .setUrlParams(RunParams)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(RunRecord)
      .addError(Wire.NotFound)
      .pipe(withModelCallErrors)
      .annotateContext(streamingEndpoint({
        summary: "Run an agent",
        description: "Answers `input` from the agent's instructions, the knowledge retrieved for it and the conversation so far " +
          "(a new one unless `conversation_id` is given), routed with the agent's preset. " +
          "One receipt per run, with a line item per billable step.",
        events: RUN_EVENTS
      }))
  )
  .add(
    HttpApiEndpoint.post("legacyAgentChat", "/v1/agents/:agentId/chat")
      .setPath(Schema.Struct({ agentId: Schema.String }))
      .setPayload(LegacyAgentChat)
      .setUrlParams(RunParams)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(RunRecord)
      .addError(Wire.NotFound)
      .pipe(withModelCallErrors)
      .annotateContext(OpenApi.annotations({
        summary: "Run an agent (deprecated)",
        description: "A run of the agent in the path. Answers with `Deprecation: true`, a `Sunset` date and " +
          "`Link: </v1/agents/runs>; rel=\"successor-version\"`; move to `POST /v1/agents/runs`.",
        deprecated: true
      }))
  )
  .annotate(OpenApi.Description, "Agent runs: ask an agent, continue a conversation (scope `chat`)")
  .middleware(ChatScope)
{}
