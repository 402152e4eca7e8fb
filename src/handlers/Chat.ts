/** Chat completions in the API: the key's principal and the decoded request, answered by `makeChatCompletion`. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { asResponse, makeChatCompletion } from "./chatCompletion.ts"

export const ChatHandlers = HttpApiBuilder.group(Api, "chat", (handlers) =>
  Effect.map(makeChatCompletion, (call) =>
    handlers.handle("createChatCompletion", ({ headers, payload }) =>
      Effect.flatMap(CurrentPrincipal, (principal) => Effect.map(call(payload, headers["idempotency-key"], principal), asResponse)))))
