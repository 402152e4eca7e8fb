/** `POST /v1/chat/completions`: JSON, or SSE deltas with `stream: true`. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Wire } from "../../services/ApiError.ts"
import { ChatCompletion, ChatRequest } from "../../services/Chat.ts"
import { ChatScope } from "./Security.ts"

export class ChatGroup extends HttpApiGroup.make("chat")
  .add(
    HttpApiEndpoint.post("createChatCompletion", "/v1/chat/completions")
      .setPayload(ChatRequest)
      .addSuccess(ChatCompletion)
      .addError(Wire.UpstreamError)
      .addError(Wire.UpstreamTimeout)
  )
  .middleware(ChatScope)
{}
