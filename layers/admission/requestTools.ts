/**
 * A chat request's `tool_choice` must fit its `tools`, as OpenAI requires: a
 * named function must be one of them, and `required` needs at least one. The
 * check is the admission's, before anything is held or routed, so a request no
 * route could ever express is refused as the caller's fault and writes nothing.
 */
import { Effect } from "effect"
import { InvalidRequest } from "../../services/ApiError.ts"
import type { ChatRequest } from "../../services/Chat.ts"
import { quote } from "../../services/quote.ts"

export const checkToolChoice = (request: ChatRequest): Effect.Effect<void, InvalidRequest> => {
  const choice = request.tool_choice
  const tools = request.tools ?? []
  if (choice === undefined || choice === "none" || choice === "auto") return Effect.void
  if (choice === "required") {
    return tools.length > 0
      ? Effect.void
      : Effect.fail(new InvalidRequest({ message: "tool_choice \"required\" needs at least one tool in tools.", param: "tool_choice" }))
  }
  const name = choice.function.name
  return tools.some((tool) => tool.function.name === name)
    ? Effect.void
    : Effect.fail(
      new InvalidRequest({ message: `tool_choice names the function "${quote(name)}", which is not in tools.`, param: "tool_choice" })
    )
}
