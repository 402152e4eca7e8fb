/**
 * `POST /v1/chat/completions`: JSON, or SSE deltas with `stream: true`. Billed
 * responses carry `x-svc-receipt-id` and, for JSON, `x-svc-upstream-cost-usd`,
 * `x-svc-margin-usd` and `x-svc-total-usd`.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { ChatCompletion, ChatRequest } from "../../services/Chat.ts"
import { IdempotencyHeaders } from "./IdempotencyHeader.ts"
import { withModelCallErrors } from "./modelCallErrors.ts"
import { streamingEndpoint } from "./operationDocs.ts"
import { ChatScope } from "./Security.ts"

export class ChatGroup extends HttpApiGroup.make("chat")
  .add(
    HttpApiEndpoint.post("createChatCompletion", "/v1/chat/completions")
      .setPayload(ChatRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(ChatCompletion)
      .pipe(withModelCallErrors)
      .annotateContext(streamingEndpoint({
        summary: "Create a chat completion",
        description: "OpenAI-compatible chat completion with routing extensions (`models`, `route`, `privacy`), " +
          "billed against the key's account; the response names its receipt in `x-svc-receipt-id`.",
        events: "With `stream: true`: server-sent events, each `data:` line one ChatCompletionChunk as JSON " +
          "(the last with usage when `stream_options.include_usage` is set), then `data: [DONE]`; " +
          "a failure after the first byte is an `event: error` frame carrying the error envelope."
      }))
  )
  .annotate(OpenApi.Description, "OpenAI-compatible chat completions, routed, billed and held to a privacy class")
  .middleware(ChatScope)
{}
