/**
 * A streamed chat completion as Responses events, in OpenAI's order:
 * `response.created`, `response.in_progress`, then per output item
 * `output_item.added`, its deltas (`output_text.delta` or
 * `function_call_arguments.delta`), its `.done` events and
 * `output_item.done`, and last `response.completed` (or
 * `response.incomplete` when cut at the token cap) with the whole response.
 * A failure after the first byte ends the stream with `response.failed`.
 * One translator per stream: it keeps what the items have said so far.
 */
import { codeOf } from "../../services/ApiError.ts"
import type { ChatChunk, Usage } from "../../services/Chat.ts"
import type { ChatError } from "../../services/ChatGateway.ts"
import type { OutputItem, ResponseObject } from "../../services/Responses.ts"
import { responsesUsage, statusOf } from "./fromChat.ts"

export interface ResponsesEvent {
  readonly type: string
  readonly sequence_number: number
  readonly [field: string]: unknown
}

interface OpenText {
  readonly id: string
  readonly index: number
  text: string
}
interface OpenCall {
  readonly id: string
  readonly index: number
  readonly callId: string
  readonly name: string
  args: string
}

/** Translates one stream; `ids` names the response and its items (the receipt's unique part). */
export const eventTranslator = (ids: { readonly response: string; readonly unique: string }) => {
  let sequence = 0
  let started = false
  let created = 0
  let model = ""
  let message: OpenText | undefined
  const calls = new Map<number, OpenCall>()
  const done: Array<OutputItem> = []
  let finish: string | null = null
  let usage: Usage | undefined
  let privacy: ResponseObject["privacy"]

  const event = (type: string, fields: Record<string, unknown>): ResponsesEvent => ({ type, sequence_number: sequence++, ...fields })
  const response = (status: ResponseObject["status"], extra: Partial<ResponseObject> = {}): ResponseObject => ({
    id: ids.response,
    object: "response",
    created_at: created,
    status,
    incomplete_details: null,
    error: null,
    model,
    output: [...done],
    usage: usage === undefined ? null : responsesUsage(usage),
    store: false,
    ...(privacy !== undefined ? { privacy } : {}),
    ...extra
  })

  const start = (chunk: ChatChunk | undefined): Array<ResponsesEvent> => {
    if (started) return []
    started = true
    created = chunk?.created ?? 0
    model = chunk?.model ?? ""
    return [event("response.created", { response: response("in_progress") }), event("response.in_progress", { response: response("in_progress") })]
  }

  const closeMessage = (): Array<ResponsesEvent> => {
    if (message === undefined) return []
    const { id, index, text } = message
    message = undefined
    const part = { type: "output_text", text, annotations: [] }
    const item: OutputItem = { type: "message", id, status: "completed", role: "assistant", content: [part as any] }
    done.push(item)
    return [
      event("response.output_text.done", { item_id: id, output_index: index, content_index: 0, text, logprobs: [] }),
      event("response.content_part.done", { item_id: id, output_index: index, content_index: 0, part }),
      event("response.output_item.done", { output_index: index, item })
    ]
  }

  const closeCalls = (): Array<ResponsesEvent> =>
    [...calls.values()].flatMap((call) => {
      const item: OutputItem = { type: "function_call", id: call.id, call_id: call.callId, name: call.name, arguments: call.args, status: "completed" }
      done.push(item)
      return [
        event("response.function_call_arguments.done", { item_id: call.id, output_index: call.index, arguments: call.args }),
        event("response.output_item.done", { output_index: call.index, item })
      ]
    })

  const text = (delta: string): Array<ResponsesEvent> => {
    const out: Array<ResponsesEvent> = []
    if (message === undefined) {
      message = { id: `msg_${ids.unique}`, index: done.length + calls.size, text: "" }
      const item = { type: "message", id: message.id, status: "in_progress", role: "assistant", content: [] }
      const part = { type: "output_text", text: "", annotations: [] }
      out.push(
        event("response.output_item.added", { output_index: message.index, item }),
        event("response.content_part.added", { item_id: message.id, output_index: message.index, content_index: 0, part })
      )
    }
    message.text += delta
    out.push(event("response.output_text.delta", { item_id: message.id, output_index: message.index, content_index: 0, delta, logprobs: [] }))
    return out
  }

  const toolCall = (delta: NonNullable<ChatChunk["choices"][number]["delta"]["tool_calls"]>[number]): Array<ResponsesEvent> => {
    const out: Array<ResponsesEvent> = []
    let call = calls.get(delta.index)
    if (call === undefined) {
      out.push(...closeMessage())
      call = { id: `fc_${ids.unique}_${delta.index}`, index: done.length + calls.size, callId: delta.id ?? `call_${ids.unique}_${delta.index}`, name: delta.function?.name ?? "", args: "" }
      calls.set(delta.index, call)
      const item = { type: "function_call", id: call.id, call_id: call.callId, name: call.name, arguments: "", status: "in_progress" }
      out.push(event("response.output_item.added", { output_index: call.index, item }))
    }
    const piece = delta.function?.arguments ?? ""
    if (piece !== "") {
      call.args += piece
      out.push(event("response.function_call_arguments.delta", { item_id: call.id, output_index: call.index, delta: piece }))
    }
    return out
  }

  return {
    /** The events one chat chunk makes. */
    chunk: (chunk: ChatChunk): Array<ResponsesEvent> => {
      const out = start(chunk)
      if (chunk.usage) usage = chunk.usage
      if (chunk.privacy) privacy = chunk.privacy
      for (const choice of chunk.choices) {
        if (choice.delta.content) out.push(...text(choice.delta.content))
        for (const call of choice.delta.tool_calls ?? []) out.push(...toolCall(call))
        if (choice.finish_reason) finish = choice.finish_reason
      }
      return out
    },
    /** The events that end a stream that ended well. */
    end: (): Array<ResponsesEvent> => {
      const out = [...start(undefined), ...closeMessage(), ...closeCalls()]
      const { status, incomplete_details } = statusOf(finish)
      const type = status === "completed" ? "response.completed" : "response.incomplete"
      return [...out, event(type, { response: response(status, { incomplete_details }) })]
    },
    /** The events that end a stream that failed after its first byte. */
    fail: (error: ChatError): Array<ResponsesEvent> => [
      ...start(undefined),
      event("response.failed", { response: response("failed", { error: { code: codeOf(error), message: error.message } }) })
    ]
  }
}
