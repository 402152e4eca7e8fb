/**
 * Our neutral request as an Anthropic Messages body. Parameters Anthropic
 * lacks (seed, penalties, logit_bias, ...) are dropped because it rejects
 * unknown fields; `top_k` is passed on, `user` becomes `metadata.user_id`,
 * `parallel_tool_calls: false` becomes `disable_parallel_tool_use`, and
 * temperature is capped at Anthropic's maximum of 1.
 *
 * Structured output: this API version has no native JSON mode, so
 * `response_format` (json_schema / json_object) is served the usual way: one
 * extra tool whose `input_schema` is the schema, which the model must call,
 * forced alone when the caller offers no tools the model may use, else `any`
 * tool so it can still call theirs. That tool's input is returned as the
 * message content (see `response.ts`). With `tool_choice` required or named
 * the answer is a tool call anyway, so no tool is added.
 */
import type { ChatRequest } from "../../../services/Chat.ts"
import { requestedMaxTokens } from "../../../services/Chat.ts"
import type { UpstreamCall } from "../../../services/Providers.ts"
import type { Json } from "../../support/json.ts"
import { conversationOf } from "./messages.ts"

const ANSWER_TOOL = "json_answer"

type Block = Json

interface ToolPlan {
  readonly tools?: Array<Block>
  readonly tool_choice?: Block
  /** The name of the tool standing in for structured output, when there is one. */
  readonly answerTool?: string
}

const choiceOf = (choice: ChatRequest["tool_choice"]): Block | undefined => {
  switch (choice) {
    case undefined:
      return undefined
    case "auto":
      return { type: "auto" }
    case "none":
      return { type: "none" }
    case "required":
      return { type: "any" }
    default:
      return { type: "tool", name: choice.function.name }
  }
}

/** The schema as a tool's input schema, which Anthropic requires to be an object schema. */
const answerSchemaOf = (format: NonNullable<ChatRequest["response_format"]>): Json => {
  const schema = format.type === "json_schema" ? format.json_schema.schema : undefined
  return schema === undefined ? { type: "object" } : { type: "object", ...schema }
}

const toolPlanOf = (request: ChatRequest): ToolPlan => {
  const tools: Array<Block> = (request.tools ?? []).map(({ function: fn }) => ({
    name: fn.name,
    ...(fn.description !== undefined ? { description: fn.description } : {}),
    input_schema: { type: "object", ...(fn.parameters ?? { properties: {} }) }
  }))
  const choice = request.tool_choice
  const single = request.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {}
  const format = request.response_format
  const forcesCallerTool = tools.length > 0 && (choice === "required" || typeof choice === "object")
  if (format !== undefined && format.type !== "text" && !forcesCallerTool) {
    let name = ANSWER_TOOL
    while (tools.some((tool) => tool.name === name)) name = `_${name}`
    const description = (format.type === "json_schema" ? format.json_schema.description : undefined) ??
      "Give your final answer by calling this tool: its input is the answer, as JSON."
    const callerToolsUsable = tools.length > 0 && choice !== "none"
    return {
      tools: [...tools, { name, description, input_schema: answerSchemaOf(format) }],
      tool_choice: callerToolsUsable
        ? { type: "any", ...single }
        : { type: "tool", name, disable_parallel_tool_use: true },
      answerTool: name
    }
  }
  if (tools.length === 0) return {}
  const mapped = choiceOf(choice) ?? (request.parallel_tool_calls === false ? { type: "auto" } : undefined)
  return { tools, ...(mapped ? { tool_choice: mapped.type === "none" ? mapped : { ...mapped, ...single } } : {}) }
}

// ---- request: body -----------------------------------------------------------

export interface Plan {
  readonly body: Json
  readonly answerTool: string | undefined
}

/**
 * `defaultMaxTokens` is sent when the request carries no limit (Anthropic requires `max_tokens`); through the
 * gateway it always carries one, the output its hold reserved (layers/upstream/outputCap.ts), so this
 * default can never ask for more than was held.
 */
export const planOf = (call: UpstreamCall, streaming: boolean, defaultMaxTokens: number): Plan => {
  const { request } = call
  const { system, messages } = conversationOf(request.messages)
  const { answerTool, ...tools } = toolPlanOf(request)
  const stop = typeof request.stop === "string" ? [request.stop] : request.stop
  return {
    answerTool,
    body: {
      model: call.upstreamModel,
      max_tokens: requestedMaxTokens(request) ?? defaultMaxTokens,
      ...(system !== undefined ? { system } : {}),
      messages,
      // OpenAI's range is 0–2, Anthropic's 0–1.
      ...(request.temperature != null ? { temperature: Math.min(request.temperature, 1) } : {}),
      ...(request.top_p != null ? { top_p: request.top_p } : {}),
      ...(typeof request.top_k === "number" ? { top_k: request.top_k } : {}),
      ...(stop != null && stop.length > 0 ? { stop_sequences: stop } : {}),
      ...(request.user !== undefined ? { metadata: { user_id: request.user } } : {}),
      ...tools,
      ...(streaming ? { stream: true } : {})
    }
  }
}
