/**
 * What a request asks the sandbox for: the reply text (built from the last
 * user message or tool result), the shape `response_format` wants, which tool
 * to call, and the prompt's token count. A `tool_choice` naming a function
 * that is not among `tools` is not translatable.
 */
import { Effect } from "effect"
import type { ChatRequest, FunctionTool, Message } from "../../../services/Chat.ts"
import { RequestNotTranslatable, type UpstreamCall } from "../../../services/Providers.ts"
import { jsonSchemaSample } from "../../support/jsonSchemaSample.ts"
import { countTokens } from "./tokens.ts"

const textOf = (content: string | ReadonlyArray<{ readonly type: string }> | null | undefined): string =>
  typeof content === "string"
    ? content
    : (content ?? []).flatMap((part) => (isTextPart(part) ? [part.text] : [])).join("\n")

const isTextPart = (part: { readonly type: string }): part is { readonly type: "text"; readonly text: string } =>
  part.type === "text" && "text" in part && typeof part.text === "string"

const messageText = (message: Message): string =>
  message.role === "assistant"
    ? [textOf(message.content), ...(message.tool_calls ?? []).flatMap((c) => [c.function.name, c.function.arguments])]
      .join("\n")
    : textOf(message.content)

export const promptTokens = (request: ChatRequest): number =>
  request.messages.reduce((sum, message) => sum + countTokens(messageText(message)), 0) +
  (request.tools ?? []).reduce((sum, tool) => sum + countTokens(JSON.stringify(tool.function)), 0)

const clip = (text: string, max = 120): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= max ? flat : `${flat.slice(0, max - 3)}...`
}

export const replyText = ({ request, upstreamModel }: UpstreamCall): string => {
  const last = request.messages[request.messages.length - 1]
  if (last?.role === "tool") {
    const call = request.messages
      .flatMap((m) => (m.role === "assistant" ? m.tool_calls ?? [] : []))
      .find((c) => c.id === last.tool_call_id)
    const tool = call ? `the ${call.function.name} tool` : "the tool"
    return `Sandbox reply from ${upstreamModel}: ${tool} returned "${clip(textOf(last.content))}"`
  }
  const user = [...request.messages].reverse().find((m) => m.role === "user")
  const parts = typeof user?.content === "string" ? [] : user?.content ?? []
  const images = parts.filter((part) => part.type === "image_url").length
  const reply = `Sandbox reply from ${upstreamModel} to: "${clip(textOf(user?.content))}"`
  return images === 0 ? reply : `${reply} I received ${images} image${images === 1 ? "" : "s"}.`
}

/** The reply in the shape `response_format` asks for. */
export const formatted = (request: ChatRequest, reply: string): string => {
  const format = request.response_format
  if (format?.type === "json_schema" && format.json_schema.schema) {
    return JSON.stringify(jsonSchemaSample(format.json_schema.schema))
  }
  if (format?.type === "json_schema" || format?.type === "json_object") return JSON.stringify({ reply })
  return reply
}

/** Which tool to call, if any. "auto" stops calling once a tool result came back, so agent loops end. */
export const chooseTool = (request: ChatRequest): Effect.Effect<FunctionTool | undefined, RequestNotTranslatable> => {
  const tools = request.tools ?? []
  const choice = request.tool_choice ?? "auto"
  if (tools.length === 0 || choice === "none") return Effect.succeed(undefined)
  if (typeof choice === "object") {
    const named = tools.find((tool) => tool.function.name === choice.function.name)
    return named
      ? Effect.succeed(named)
      : Effect.fail(new RequestNotTranslatable({ reason: `tool_choice names "${choice.function.name}", which is not among tools` }))
  }
  const lastRole = request.messages[request.messages.length - 1]?.role
  return Effect.succeed(choice === "auto" && lastRole === "tool" ? undefined : tools[0])
}
