/** Chat completions: shape translation only; the gateway service does the work. */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { ChatGateway } from "../../services/ChatGateway.ts"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { sseResponse } from "../http/Sse.ts"

export const ChatHandlers = HttpApiBuilder.group(Api, "chat", (handlers) =>
  Effect.gen(function*() {
    const gateway = yield* ChatGateway
    return handlers.handle("createChatCompletion", ({ payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        if (payload.stream === true) return sseResponse(yield* gateway.stream(payload, principal))
        // Built without a second Schema pass: the gateway already returns the wire shape.
        return HttpServerResponse.unsafeJson(yield* gateway.complete(payload, principal))
      }))
  }))
