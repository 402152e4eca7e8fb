/**
 * Gemini's SSE frames (`streamGenerateContent?alt=sse`, each a whole
 * `GenerateContentResponse`) as our chat chunks. Gemini sends no end marker:
 * the body's end completes the stream, and it is complete only if some frame
 * gave a finish reason (else it was cut off). Usage counts are cumulative and
 * go out in a last chunk of their own.
 */
import { Stream } from "effect"
import type { ChatChunk, ToolCallDelta, Usage } from "../../../services/Chat.ts"
import type { AttemptDeadline, UpstreamFailure } from "../../../services/Providers.ts"
import type { UpstreamBody } from "../../support/streamedAnswer.ts"
import { Malformed, protocolFailure, recordOf } from "../../support/json.ts"
import { type SseEvent, sseStream, type Translation } from "../../support/sse.ts"
import { finishReasonOf, promptBlocked, rejectErrorBody, replyOf, usageOf } from "./response.ts"

/** One stream's chunks; `created` is the stream's start. */
export const chunksOf = (
  body: UpstreamBody,
  fallbackModel: string,
  created: number,
  /** The attempt's deadline, when the adapter keeps it (sse.ts). */
  deadline?: AttemptDeadline
): Stream.Stream<ChatChunk, UpstreamFailure> => {
  let sentRole = false
  let toolCalls = 0
  let finished = false
  let usage: Usage | undefined
  const chunk = (choices: ChatChunk["choices"], extra: Partial<ChatChunk> = {}): ChatChunk => ({
    id: "",
    object: "chat.completion.chunk",
    created,
    model: fallbackModel,
    choices,
    ...extra
  })

  const translate = (event: SseEvent): Translation<ChatChunk> => {
    if (event.event === "error") throw new Malformed("upstream sent an error event")
    if (event.event !== "message" || event.data === "") return { out: [], done: false }
    const json = recordOf(JSON.parse(event.data), "stream frame")
    rejectErrorBody(json)
    // Counts are cumulative: the last one seen is the answer's.
    usage = usageOf(json.usageMetadata) ?? usage
    if (finished) return { out: [], done: false }
    const reply = replyOf(json)
    if (reply === undefined) {
      if (!promptBlocked(json)) return { out: [], done: false }
      finished = true
      const role = sentRole ? {} : { role: "assistant" as const }
      sentRole = true
      return { out: [chunk([{ index: 0, delta: { ...role, content: "" }, finish_reason: "content_filter" }])], done: false }
    }
    const deltas = reply.calls.map((call): ToolCallDelta => {
      const index = toolCalls++
      return { index, id: `call_${index}`, type: "function", function: { name: call.name, arguments: JSON.stringify(call.args) } }
    })
    const finishReason = finishReasonOf(reply.finishReason, toolCalls > 0)
    finished = finishReason !== null
    if (reply.text === "" && deltas.length === 0 && finishReason === null) return { out: [], done: false }
    const delta: ChatChunk["choices"][number]["delta"] = {
      ...(sentRole ? {} : { role: "assistant" as const }),
      // The first chunk carries content like OpenAI's: "" before text, null before tool calls.
      ...(reply.text !== "" ? { content: reply.text } : sentRole ? {} : { content: deltas.length > 0 ? null : "" }),
      ...(deltas.length > 0 ? { tool_calls: deltas } : {})
    }
    sentRole = true
    return { out: [chunk([{ index: 0, delta, finish_reason: finishReason }])], done: false }
  }

  const end = Stream.suspend(() =>
    !finished
      ? Stream.fail(protocolFailure("upstream stream ended without a finish reason"))
      : usage !== undefined
      ? Stream.make(chunk([], { usage }))
      : Stream.empty
  )
  return sseStream(body, translate, { endMarker: false, deadline }).pipe(Stream.concat(end))
}
