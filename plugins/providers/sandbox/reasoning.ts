/**
 * The sandbox's reasoning model thinks aloud before it answers: a short,
 * deterministic plan, returned as `reasoning_content` and counted in
 * `completion_tokens` (with `completion_tokens_details.reasoning_tokens`), as
 * a real reasoning model bills its thinking as output. It shares the token
 * limit with the answer, thinking first.
 */
import type { ChatRequest, FunctionTool } from "../../../services/Chat.ts"
import { limitTokens } from "./tokens.ts"

/** Sandbox models whose upstream name says so (the default install's `svc/sandbox-reasoner`) reason first. */
export const reasons = (upstreamModel: string): boolean => /reasoner/.test(upstreamModel)

const step = (request: ChatRequest, tool: FunctionTool | undefined): string => {
  if (tool) return `The request needs the ${tool.function.name} tool, so I call it with arguments that fit its schema.`
  if (request.messages[request.messages.length - 1]?.role === "tool") return "A tool result came back, so I report it."
  const format = request.response_format?.type
  if (format === "json_schema" || format === "json_object") return "The answer must be JSON, so I shape it to the format."
  return "I restate what was asked and answer it."
}

/** The thinking before the answer, cut to `max` tokens. */
export const reasoningFor = (request: ChatRequest, tool: FunctionTool | undefined, max: number | undefined) =>
  limitTokens(`Let me think about this. ${step(request, tool)}`, max)
