/**
 * `POST /v1/chat/completions`: JSON, or SSE deltas with `stream: true`. Billed
 * responses carry `x-svc-receipt-id` and, for JSON, `x-svc-upstream-cost-usd`,
 * `x-svc-margin-usd` and `x-svc-total-usd`.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Wire } from "../../services/ApiError.ts"
import { ChatCompletion, ChatRequest } from "../../services/Chat.ts"
import { IdempotencyHeaders } from "./IdempotencyHeader.ts"
import { ChatScope } from "./Security.ts"

export class ChatGroup extends HttpApiGroup.make("chat")
  .add(
    HttpApiEndpoint.post("createChatCompletion", "/v1/chat/completions")
      .setPayload(ChatRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(ChatCompletion)
      .addError(Wire.InsufficientFunds)
      .addError(Wire.Conflict)
      .addError(Wire.RateLimited)
      .addError(Wire.PrivacyClassUnavailable)
      .addError(Wire.UpstreamError)
      .addError(Wire.ServiceUnavailable)
      .addError(Wire.UpstreamTimeout)
  )
  .middleware(ChatScope)
{}
