/**
 * A chat request's messages: in the clear in `messages`, or sealed in the
 * legacy `privacy.encryptedPrompt` (opened here, before anything counts or
 * routes them). Exactly one of the two carries them.
 */
import { Effect } from "effect"
import { InvalidRequest } from "../../services/ApiError.ts"
import type { ChatRequest } from "../../services/Chat.ts"
import type { SealedPrompts } from "../../services/SealedPrompts.ts"

/** The request with its messages in the clear and no sealed prompt left in it. */
export const withOpenMessages = (
  sealed: SealedPrompts["Type"],
  request: ChatRequest
): Effect.Effect<ChatRequest, InvalidRequest> => {
  const jwe = request.privacy?.encryptedPrompt
  if (jwe === undefined) {
    return request.messages.length > 0
      ? Effect.succeed(request)
      : Effect.fail(new InvalidRequest({ message: "messages must hold at least one message.", param: "messages" }))
  }
  if (request.messages.length > 0) {
    return Effect.fail(
      new InvalidRequest({
        message: "Send the messages either in messages or sealed in privacy.encryptedPrompt, not both.",
        param: "privacy.encryptedPrompt"
      })
    )
  }
  const { encryptedPrompt: _, ...privacy } = request.privacy!
  return Effect.map(sealed.open(jwe), (messages) => ({ ...request, messages, privacy }))
}
