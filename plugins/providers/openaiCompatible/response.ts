/**
 * An OpenAI chat completion rebuilt from known fields only (plain field
 * picking: this is the hot path), so nothing upstream-specific reaches our
 * callers. The field readers are shared with `stream.ts`.
 */
import type { FinishReason, ToolCall, Usage } from "../../../services/Chat.ts"
import type { UpstreamCompletion } from "../../../services/Providers.ts"
import { arrayOf, errorKindOf, fail, given, intOr, isRecord, type Json, Malformed, recordOf, reportedCount, stringOr } from "../../support/json.ts"

export const finishReasonOf = (u: unknown): FinishReason | null => {
  switch (u) {
    case "stop":
    case "length":
    case "tool_calls":
    case "content_filter":
      return u
    case "function_call":
      return "tool_calls"
    case null:
    case undefined:
      return null
    default:
      return "stop"
  }
}

/** Usage as reported: absent when neither figure is given; a figure that is missing or no number is NaN. */
export const usageOf = (u: unknown): Usage | undefined => {
  if (!isRecord(u) || (!given(u.prompt_tokens) && !given(u.completion_tokens))) return undefined
  const prompt_tokens = reportedCount(u.prompt_tokens)
  const completion_tokens = reportedCount(u.completion_tokens)
  return { prompt_tokens, completion_tokens, total_tokens: intOr(u.total_tokens, prompt_tokens + completion_tokens) }
}

export const argumentsOf = (u: unknown): string => (typeof u === "string" ? u : JSON.stringify(u ?? {}))

const toolCallOf = (u: unknown, i: number): ToolCall => {
  const call = recordOf(u, "tool call")
  const fn = recordOf(call.function, "tool call function")
  return {
    id: stringOr(call.id, `call_${i}`),
    type: "function",
    function: { name: stringOr(fn.name, ""), arguments: argumentsOf(fn.arguments) }
  }
}

/** Throws if the body is an upstream error report rather than a completion. */
export const rejectErrorBody = (json: Json) => {
  if (json.error !== undefined && json.error !== null && json.choices === undefined) {
    throw new Malformed(`upstream reported an error (${errorKindOf(json.error)})`)
  }
}

/** `nowSeconds` stands in for a missing `created`. */
export const completionOf = (u: unknown, fallbackModel: string, nowSeconds: number): UpstreamCompletion => {
  const json = recordOf(u, "completion")
  rejectErrorBody(json)
  const usage = usageOf(json.usage)
  const choices = arrayOf(json.choices, "choices")
  if (choices.length === 0) throw new Malformed("completion has no choices")
  return {
    id: stringOr(json.id, "") || fail("completion has no id"),
    object: "chat.completion",
    created: intOr(json.created, nowSeconds),
    model: stringOr(json.model, fallbackModel),
    choices: choices.map((c, i) => {
      const choice = recordOf(c, "choice")
      const message = recordOf(choice.message, "message")
      return {
        index: intOr(choice.index, i),
        message: {
          role: "assistant" as const,
          content: stringOr(message.content, null),
          ...(Array.isArray(message.tool_calls) && message.tool_calls.length > 0
            ? { tool_calls: message.tool_calls.map(toolCallOf) }
            : {}),
          ...(message.refusal !== undefined ? { refusal: stringOr(message.refusal, null) } : {})
        },
        finish_reason: finishReasonOf(choice.finish_reason) ?? "stop",
        ...(choice.logprobs != null ? { logprobs: choice.logprobs } : {})
      }
    }),
    ...(usage ? { usage } : {})
  }
}
