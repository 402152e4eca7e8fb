/**
 * Anthropic's SSE events as our chat chunks. The translator keeps state per
 * stream: what each content block index turned out to be (text, a caller's
 * tool call, the structured-output answer, or something of the upstream's own
 * such as thinking), the stop reason, and usage, which arrives in parts.
 * `ping` and event types Anthropic may add later are skipped.
 */
import type { ChatChunk, FinishReason, ToolCallDelta } from "../../../services/Chat.ts"
import { given, intOr, isRecord, type Json, Malformed, recordOf, stringOr } from "../../support/json.ts"
import type { SseEvent, Translation } from "../../support/sse.ts"
import { callerToolId, errorMessageOf, finishReasonOf, usageOf } from "./response.ts"


/** What a content block index of the stream turned out to be. */
type StreamBlock =
  | { readonly kind: "text" }
  | { readonly kind: "tool"; readonly position: number; readonly input: unknown; emitted: boolean }
  | { readonly kind: "answer"; readonly input: unknown; emitted: boolean }
  | { readonly kind: "other" }

const none: Translation<ChatChunk> = { out: [], done: false }

/** Chat chunks from one stream's events; `created` is the stream's start. */
export const translator = (upstreamModel: string, answerTool: string | undefined, created: number) => {
  let id = "msg"
  let started = false
  const blocks = new Map<number, StreamBlock>()
  let toolCount = 0
  let stopReason: unknown = undefined
  // Message usage arrives in parts (input at the start, output at the end); later values win.
  const usage: Json = {}

  const chunk = (delta: ChatChunk["choices"][number]["delta"], finish: FinishReason | null = null): ChatChunk => {
    // The first chunk carries the role, whatever event produced it.
    const withRole = started ? delta : { role: "assistant" as const, ...delta }
    started = true
    return { id, object: "chat.completion.chunk", created, model: upstreamModel, choices: [{ index: 0, delta: withRole, finish_reason: finish }] }
  }
  const content = (text: string) => ({ out: [chunk({ content: text })], done: false })
  const toolDelta = (delta: ToolCallDelta) => ({ out: [chunk({ tool_calls: [delta] })], done: false })
  const noteUsage = (u: unknown) => {
    // Every figure given, valid or not: billing judges them (a malformed one must not leave an earlier one standing).
    if (isRecord(u)) for (const [key, value] of Object.entries(u)) if (given(value)) usage[key] = value
  }
  /** Arguments of a block: its streamed JSON, or the start's input when nothing was streamed. */
  const argumentsDelta = (block: Extract<StreamBlock, { emitted: boolean }>, partial: string | undefined) => {
    const text = partial ?? (block.emitted ? "" : JSON.stringify(block.input ?? {}))
    if (text === "") return none
    block.emitted = true
    return block.kind === "answer" ? content(text) : toolDelta({ index: block.position, function: { arguments: text } })
  }

  return (event: SseEvent): Translation<ChatChunk> => {
    if (event.data === "") return none
    const json = recordOf(JSON.parse(event.data), "event")
    switch (stringOr(json.type, event.event)) {
      case "message_start": {
        const message = recordOf(json.message, "message")
        id = stringOr(message.id, id)
        noteUsage(message.usage)
        return content("")
      }
      case "content_block_start": {
        const index = intOr(json.index, blocks.size)
        const block = recordOf(json.content_block, "content block")
        if (block.type === "text") {
          blocks.set(index, { kind: "text" })
          return stringOr(block.text, "") === "" ? none : content(block.text as string)
        }
        if (block.type !== "tool_use") {
          blocks.set(index, { kind: "other" })
          return none
        }
        const name = stringOr(block.name, "")
        if (name === answerTool) {
          blocks.set(index, { kind: "answer", input: block.input, emitted: false })
          return none
        }
        const position = toolCount++
        blocks.set(index, { kind: "tool", position, input: block.input, emitted: false })
        return toolDelta({
          index: position,
          id: callerToolId(stringOr(block.id, `call_${position}`)),
          type: "function",
          function: { name, arguments: "" }
        })
      }
      case "content_block_delta": {
        const delta = recordOf(json.delta, "delta")
        const block = blocks.get(intOr(json.index, -1))
        if (delta.type === "text_delta") return stringOr(delta.text, "") === "" ? none : content(delta.text as string)
        if (delta.type !== "input_json_delta" || block?.kind === "other") return none
        if (block === undefined || block.kind === "text") throw new Malformed("input_json_delta outside a tool_use block")
        return argumentsDelta(block, stringOr(delta.partial_json, ""))
      }
      case "content_block_stop": {
        const block = blocks.get(intOr(json.index, -1))
        return block?.kind === "tool" || block?.kind === "answer" ? argumentsDelta(block, undefined) : none
      }
      case "message_delta": {
        if (isRecord(json.delta) && json.delta.stop_reason != null) stopReason = json.delta.stop_reason
        noteUsage(json.usage)
        return none
      }
      case "message_stop": {
        const out = [chunk({}, finishReasonOf(stopReason, toolCount > 0))]
        const total = usageOf(usage)
        if (total) out.push({ id, object: "chat.completion.chunk", created, model: upstreamModel, choices: [], usage: total })
        return { out, done: true }
      }
      case "error":
        throw new Malformed(`upstream error event: ${errorMessageOf(json)}`)
      default:
        // `ping`, and event types Anthropic may add later.
        return none
    }
  }
}
