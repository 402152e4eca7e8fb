/**
 * `POST /v1/responses`: the OpenAI Responses API, served as a chat call
 * (same routing, privacy, billing, receipts and idempotency), stateless.
 * JSON, or Responses events over SSE with `stream: true`.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { ResponseObject, ResponsesRequest } from "../../services/Responses.ts"
import { IdempotencyHeaders } from "./IdempotencyHeader.ts"
import { withModelCallErrors } from "./modelCallErrors.ts"
import { streamingEndpoint } from "./operationDocs.ts"
import { ChatScope } from "./Security.ts"

export class ResponsesGroup extends HttpApiGroup.make("responses")
  .add(
    HttpApiEndpoint.post("createResponse", "/v1/responses")
      .setPayload(ResponsesRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(ResponseObject)
      .pipe(withModelCallErrors)
      .annotateContext(streamingEndpoint({
        summary: "Create a response",
        description: "The OpenAI Responses API over the chat pipeline: `input` (a string or message, function_call " +
          "and function_call_output items), `instructions`, function `tools`, `text.format`, `max_output_tokens`, " +
          "and the routing extensions. Stateless: `previous_response_id`, stored items and built-in tools are refused. " +
          "The response names its receipt in `x-svc-receipt-id`.",
        events: "With `stream: true`: server-sent events, each an `event:` line with the Responses event type and a " +
          "`data:` line with the event as JSON (`response.created`, `response.output_text.delta`, …, " +
          "`response.completed`); a failure after the first byte is a `response.failed` event."
      }))
  )
  .annotate(OpenApi.Description, "The OpenAI Responses API, served statelessly over the chat pipeline")
  .middleware(ChatScope)
{}
