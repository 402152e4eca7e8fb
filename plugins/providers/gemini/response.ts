/**
 * A Gemini `GenerateContentResponse` as our completion, rebuilt from known
 * fields only, so nothing Gemini-specific (model version, response id, safety
 * ratings, thought parts) reaches our callers. Only the first candidate is
 * used. The field readers are shared with `stream.ts`.
 */
import type { FinishReason, ToolCall, Usage } from "../../../services/Chat.ts"
import type { UpstreamCompletion } from "../../../services/Providers.ts"
import { arrayOf, errorKindOf, fail, given, isRecord, type Json, Malformed, recordOf, reportedCount, stringOr } from "../../support/json.ts"

const FILTERED = new Set(["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"])

export const finishReasonOf = (u: unknown, calledTools: boolean): FinishReason | null => {
  if (u === undefined || u === null) return null
  if (u === "MAX_TOKENS") return "length"
  if (typeof u === "string" && FILTERED.has(u)) return "content_filter"
  // Gemini says STOP after function calls too; OpenAI clients look for tool_calls.
  return calledTools ? "tool_calls" : "stop"
}

/** Thinking tokens are generated and billed as output, like OpenAI's reasoning tokens. */
export const usageOf = (u: unknown): Usage | undefined => {
  if (!isRecord(u) || !given(u.promptTokenCount)) return undefined
  // A figure that is not a number is NaN, for billing to judge (layers/billing/usageCheck.ts).
  const prompt_tokens = reportedCount(u.promptTokenCount) + reportedCount(u.toolUsePromptTokenCount, 0)
  const completion_tokens = reportedCount(u.candidatesTokenCount, 0) + reportedCount(u.thoughtsTokenCount, 0)
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens }
}

/** Throws if the body is an upstream error report rather than a response. */
export const rejectErrorBody = (json: Json) => {
  if (json.error !== undefined && json.error !== null && json.candidates === undefined) {
    throw new Malformed(`upstream reported an error (${errorKindOf(json.error)})`)
  }
}

/** No candidates because the prompt itself was blocked. */
export const promptBlocked = (json: Json) => isRecord(json.promptFeedback) && typeof json.promptFeedback.blockReason === "string"

interface FunctionCall {
  readonly name: string
  readonly args: unknown
}

interface Reply {
  readonly text: string
  readonly calls: ReadonlyArray<FunctionCall>
  readonly finishReason: unknown
}

/** The first candidate's text (thought summaries left out) and function calls. */
export const replyOf = (json: Json): Reply | undefined => {
  const candidates = json.candidates === undefined ? [] : arrayOf(json.candidates, "candidates")
  if (candidates.length === 0) return undefined
  const candidate = recordOf(candidates[0], "candidate")
  const content = isRecord(candidate.content) ? candidate.content : {}
  let text = ""
  const calls: Array<FunctionCall> = []
  for (const u of content.parts === undefined ? [] : arrayOf(content.parts, "parts")) {
    const part = recordOf(u, "part")
    if (typeof part.text === "string" && part.thought !== true) text += part.text
    if (isRecord(part.functionCall)) {
      const name = stringOr(part.functionCall.name, "") || fail("function call without a name")
      calls.push({ name, args: part.functionCall.args ?? {} })
    }
  }
  return { text, calls, finishReason: candidate.finishReason }
}

/** Gemini's calls have no ids; ours are numbered per answer. */
const toolCallOf = (call: FunctionCall, i: number): ToolCall => ({
  id: `call_${i}`,
  type: "function",
  function: { name: call.name, arguments: JSON.stringify(call.args) }
})

export const completionOf = (u: unknown, fallbackModel: string, nowSeconds: number): UpstreamCompletion => {
  const json = recordOf(u, "response")
  rejectErrorBody(json)
  const usage = usageOf(json.usageMetadata)
  const reply = replyOf(json)
  if (reply === undefined && !promptBlocked(json)) throw new Malformed("response has no candidates")
  const calls = reply?.calls ?? []
  return {
    // The gateway gives the answer its own id; Gemini's responseId would only name the upstream.
    id: "",
    object: "chat.completion",
    created: nowSeconds,
    model: fallbackModel,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: calls.length > 0 && reply?.text === "" ? null : reply?.text ?? "",
        ...(calls.length > 0 ? { tool_calls: calls.map(toolCallOf) } : {})
      },
      finish_reason: reply === undefined ? "content_filter" : finishReasonOf(reply.finishReason, calls.length > 0) ?? "stop"
    }],
    ...(usage ? { usage } : {})
  }
}
