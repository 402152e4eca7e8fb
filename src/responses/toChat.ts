/**
 * A Responses request as the chat request it is served as: `instructions`
 * and the input items become messages, function tools and `text.format`
 * their chat forms, `max_output_tokens` the output cap. What a stateless
 * gateway cannot serve (a previous response, stored items, built-in tools,
 * background runs) is refused with a 400 naming the field.
 */
import { Effect, Schema } from "effect"
import { InvalidRequest } from "../../services/ApiError.ts"
import { quote } from "../../services/quote.ts"
import type { ChatRequest, ContentPart, FunctionTool, Message, ResponseFormat } from "../../services/Chat.ts"
import {
  FunctionCallItem,
  FunctionCallOutputItem,
  type InputItem,
  type InputPart,
  MessageItem,
  type ResponsesRequest
} from "../../services/Responses.ts"

const isMessage = Schema.is(MessageItem)
const isFunctionCall = Schema.is(FunctionCallItem)
const isFunctionCallOutput = Schema.is(FunctionCallOutputItem)

const refuse = (param: string, message: string) => Effect.fail(new InvalidRequest({ message, param }))

const STATELESS = "svc keeps no responses (store: false semantics): send the whole conversation in `input`"

const textOf = (parts: ReadonlyArray<InputPart>) =>
  parts.map((part) => (part.type === "refusal" ? part.refusal : part.type === "input_image" ? "" : part.text)).join("")

const userContent = (parts: ReadonlyArray<InputPart>): Array<ContentPart> =>
  parts.map((part) =>
    part.type === "input_image"
      ? { type: "image_url", image_url: { url: part.image_url, ...(part.detail ? { detail: part.detail } : {}) } }
      : { type: "text", text: part.type === "refusal" ? part.refusal : part.text }
  )

/** One input item as chat messages; a function call joins the assistant message before it. */
const addItem = (messages: Array<Message>, item: InputItem, at: string): Effect.Effect<void, InvalidRequest> => {
  if (isMessage(item)) {
    const { content } = item
    if (item.role === "user") {
      messages.push({ role: "user", content: typeof content === "string" ? content : userContent(content) })
    } else if (typeof content !== "string" && content.some((part) => part.type === "input_image")) {
      return refuse(`${at}.content`, "images are accepted in user messages only")
    } else {
      const text = typeof content === "string" ? content : textOf(content)
      messages.push(item.role === "assistant" ? { role: "assistant", content: text } : { role: item.role, content: text })
    }
    return Effect.void
  }
  if (isFunctionCall(item)) {
    const call = { id: item.call_id, type: "function" as const, function: { name: item.name, arguments: item.arguments } }
    const last = messages[messages.length - 1]
    if (last?.role === "assistant" && (last.tool_calls !== undefined || !last.content)) {
      messages[messages.length - 1] = { ...last, tool_calls: [...(last.tool_calls ?? []), call] }
    } else messages.push({ role: "assistant", content: null, tool_calls: [call] })
    return Effect.void
  }
  if (isFunctionCallOutput(item)) {
    const { output } = item
    messages.push({ role: "tool", tool_call_id: item.call_id, content: typeof output === "string" ? output : textOf(output) })
    return Effect.void
  }
  switch (item.type) {
    case "message":
    case "function_call":
    case "function_call_output":
      return refuse(at, `not a valid ${item.type} item`)
    case "reasoning":
      // A reasoning model's earlier thinking: chat upstreams take none back.
      return Effect.void
    case "item_reference":
      return refuse(at, `item_reference needs stored items; ${STATELESS} (the AI SDK: providerOptions.openai.store = false)`)
    case undefined:
      return refuse(at, "not a valid message item")
    default:
      return refuse(`${at}.type`, `input items of type "${quote(String(item.type))}" are not supported`)
  }
}

const formatOf = (request: ResponsesRequest): ResponseFormat | undefined => {
  const format = request.text?.format
  if (format === undefined || format.type === "text") return undefined
  if (format.type === "json_object") return { type: "json_object" }
  return {
    type: "json_schema",
    json_schema: {
      name: format.name,
      schema: format.schema,
      ...(format.description !== undefined ? { description: format.description } : {}),
      ...(format.strict !== undefined ? { strict: format.strict } : {})
    }
  }
}

const toolsOf = (request: ResponsesRequest): Effect.Effect<Array<FunctionTool> | undefined, InvalidRequest> =>
  Effect.forEach(request.tools ?? [], (tool, index) =>
    tool.type === "function" && "name" in tool
      ? Effect.succeed<FunctionTool>({
        type: "function",
        function: {
          name: tool.name as string,
          ...(typeof tool.description === "string" ? { description: tool.description } : {}),
          ...(tool.parameters ? { parameters: tool.parameters as Record<string, unknown> } : {}),
          ...(typeof tool.strict === "boolean" ? { strict: tool.strict } : {})
        }
      })
      : refuse(`tools[${index}].type`, `only function tools are supported, not "${quote(String(tool.type))}"`)).pipe(
      Effect.map((tools) => (tools.length === 0 ? undefined : tools))
    )

/** The chat request a Responses request is served as. */
export const toChatRequest = (request: ResponsesRequest): Effect.Effect<ChatRequest, InvalidRequest> =>
  Effect.gen(function*() {
    if (request.previous_response_id) return yield* refuse("previous_response_id", `not supported: ${STATELESS}`)
    if (request.conversation) return yield* refuse("conversation", `not supported: ${STATELESS}`)
    if (request.background === true) return yield* refuse("background", "background responses are not supported; stream instead")
    const messages: Array<Message> = request.instructions ? [{ role: "system", content: request.instructions }] : []
    if (typeof request.input === "string") messages.push({ role: "user", content: request.input })
    else for (const [index, item] of request.input.entries()) yield* addItem(messages, item, `input[${index}]`)
    if (messages.length === 0) return yield* refuse("input", "input holds no messages")
    const tools = yield* toolsOf(request)
    const format = formatOf(request)
    const choice = request.tool_choice
    return {
      model: request.model,
      messages,
      ...(request.stream === true ? { stream: true, stream_options: { include_usage: true } } : {}),
      ...(tools !== undefined ? { tools } : {}),
      ...(tools !== undefined && choice !== undefined
        ? { tool_choice: typeof choice === "string" ? choice : { type: "function" as const, function: { name: choice.name } } }
        : {}),
      ...(format !== undefined ? { response_format: format } : {}),
      ...(request.max_output_tokens ? { max_completion_tokens: request.max_output_tokens } : {}),
      ...(typeof request.temperature === "number" ? { temperature: request.temperature } : {}),
      ...(typeof request.top_p === "number" ? { top_p: request.top_p } : {}),
      ...(request.reasoning?.effort ? { reasoning_effort: request.reasoning.effort } : {}),
      ...(request.models !== undefined ? { models: request.models } : {}),
      ...(request.route !== undefined ? { route: request.route } : {}),
      ...(request.privacy !== undefined ? { privacy: request.privacy } : {})
    } satisfies ChatRequest
  })
