/**
 * OpenAI's SSE frames as our chat chunks: each `data:` frame is one chunk,
 * rebuilt from known fields only; empty frames are keep-alives and the stream
 * is complete at `data: [DONE]`.
 */
import type { ChatChunk, ToolCallDelta } from "../../../services/Chat.ts"
import { arrayOf, fail, intOr, isRecord, Malformed, recordOf, stringOr } from "../../support/json.ts"
import type { SseEvent, Translation } from "../../support/sse.ts"
import { argumentsOf, finishReasonOf, rejectErrorBody, usageOf } from "./response.ts"

const toolCallDeltaOf = (u: unknown, i: number): ToolCallDelta => {
  const call = recordOf(u, "tool call delta")
  const delta: { -readonly [K in keyof ToolCallDelta]: ToolCallDelta[K] } = { index: intOr(call.index, i) }
  if (typeof call.id === "string") delta.id = call.id
  if (call.type === "function") delta.type = "function"
  if (isRecord(call.function)) {
    const fn: { name?: string; arguments?: string } = {}
    if (typeof call.function.name === "string") fn.name = call.function.name
    if (call.function.arguments !== undefined && call.function.arguments !== null) {
      fn.arguments = argumentsOf(call.function.arguments)
    }
    delta.function = fn
  }
  return delta
}

const chunkOf = (u: unknown, fallbackModel: string, nowSeconds: number): ChatChunk => {
  const json = recordOf(u, "chunk")
  rejectErrorBody(json)
  const usage = usageOf(json.usage)
  return {
    id: stringOr(json.id, "") || fail("chunk has no id"),
    object: "chat.completion.chunk",
    created: intOr(json.created, nowSeconds),
    model: stringOr(json.model, fallbackModel),
    choices: arrayOf(json.choices ?? [], "choices").map((c, i) => {
      const choice = recordOf(c, "choice")
      const delta = isRecord(choice.delta) ? choice.delta : {}
      return {
        index: intOr(choice.index, i),
        delta: {
          ...(delta.role === "assistant" ? { role: "assistant" as const } : {}),
          ...(delta.content !== undefined ? { content: stringOr(delta.content, null) } : {}),
          ...(Array.isArray(delta.tool_calls) ? { tool_calls: delta.tool_calls.map(toolCallDeltaOf) } : {}),
          ...(delta.refusal !== undefined ? { refusal: stringOr(delta.refusal, null) } : {})
        },
        finish_reason: finishReasonOf(choice.finish_reason),
        ...(choice.logprobs != null ? { logprobs: choice.logprobs } : {})
      }
    }),
    ...(usage ? { usage } : {})
  }
}

/** One stream's translator; `nowSeconds` (the stream's start) stands in for a missing `created`. */
export const translator = (fallbackModel: string, nowSeconds: number) => (event: SseEvent): Translation<ChatChunk> => {
  if (event.event === "error") throw new Malformed("upstream sent an error event")
  // Empty data frames are keep-alives; named events are not chat chunks.
  if (event.event !== "message" || event.data === "") return { out: [], done: false }
  if (event.data === "[DONE]") return { out: [], done: true }
  return { out: [chunkOf(JSON.parse(event.data), fallbackModel, nowSeconds)], done: false }
}
