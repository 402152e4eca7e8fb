/**
 * An Anthropic message as our completion, rebuilt from known fields only, so
 * nothing upstream-specific (thinking blocks, signatures, `toolu_` ids)
 * reaches our callers. The structured-output tool's input (see `request.ts`)
 * is returned as the message content. The field readers are shared with
 * `stream.ts`.
 */
import type { FinishReason, ToolCall, Usage } from "../../../services/Chat.ts"
import type { UpstreamCompletion } from "../../../services/Providers.ts"
import { arrayOf, errorKindOf, given, isRecord, type Json, Malformed, recordOf, reportedCount, stringOr } from "../../support/json.ts"

/** What callers see: the `toolu_` prefix would name the upstream. */
export const callerToolId = (id: string) => (id.startsWith("toolu_") ? `call_${id.slice("toolu_".length)}` : id)

export const finishReasonOf = (stopReason: unknown, madeToolCalls: boolean): FinishReason => {
  switch (stopReason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    case "refusal":
      return "content_filter"
    default:
      // `tool_use` for only the structured-output tool is an answer, not a call for the caller to run.
      return madeToolCalls ? "tool_calls" : "stop"
  }
}

/** Cache reads and writes are input too: the caller pays for the whole prompt. */
const promptTokensOf = (usage: Json): number =>
  reportedCount(usage.input_tokens) + reportedCount(usage.cache_creation_input_tokens, 0) +
  reportedCount(usage.cache_read_input_tokens, 0)

/** Usage as reported: absent when neither figure is given; a figure that is missing or no number is NaN. */
export const usageOf = (u: unknown): Usage | undefined => {
  if (!isRecord(u) || (!given(u.input_tokens) && !given(u.output_tokens))) return undefined
  const prompt_tokens = promptTokensOf(u)
  const completion_tokens = reportedCount(u.output_tokens)
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens }
}

export const errorMessageOf = (json: Json) => errorKindOf(json.error)

export const completionOf = (
  u: unknown,
  upstreamModel: string,
  answerTool: string | undefined,
  nowSeconds: number
): UpstreamCompletion => {
  const json = recordOf(u, "message")
  if (json.type === "error") throw new Malformed(`upstream reported an error: ${errorMessageOf(json)}`)
  let text: string | undefined
  const toolCalls: Array<ToolCall> = []
  for (const b of arrayOf(json.content, "content")) {
    const block = recordOf(b, "content block")
    if (block.type === "text") {
      text = (text ?? "") + stringOr(block.text, "")
    } else if (block.type === "tool_use") {
      const name = stringOr(block.name, "")
      const input = JSON.stringify(block.input ?? {})
      if (name === answerTool) text = (text ?? "") + input
      else {
        toolCalls.push({
          id: callerToolId(stringOr(block.id, `call_${toolCalls.length}`)),
          type: "function",
          function: { name, arguments: input }
        })
      }
    }
    // Thinking and server-tool blocks are the upstream's own business.
  }
  const usage = usageOf(json.usage)
  return {
    id: stringOr(json.id, "msg"),
    object: "chat.completion",
    created: nowSeconds,
    model: upstreamModel,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: text ?? (toolCalls.length > 0 ? null : ""),
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {})
      },
      finish_reason: finishReasonOf(json.stop_reason, toolCalls.length > 0)
    }],
    ...(usage ? { usage } : {})
  }
}
