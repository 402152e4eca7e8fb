/**
 * A fake Anthropic Messages upstream on a real HTTP server (127.0.0.1, random
 * port), answering in Anthropic's wire format (a JSON message or SSE events),
 * scriptable per request, for the anthropic plugin's adapter and gateway
 * tests. Like the real API it refuses bodies it would not accept (unknown
 * fields, turns that do not alternate, tool results without their call), so
 * translation mistakes show up as 400s.
 */
import type { ServerResponse } from "node:http"
import { Effect } from "effect"
import { type FakeServer, startFakeServer } from "./fakeServer.ts"
import { sampleFromSchema } from "./fakeOpenAiUpstream.ts"

export type { RecordedRequest } from "./fakeServer.ts"

/** How to answer; the empty behaviour is a well-behaved upstream. "Chunks" are SSE events. */
export interface Behaviour {
  /** Answer with this status and `errorBody` (default: an Anthropic-style error object). */
  readonly status?: number
  readonly errorBody?: unknown
  /** `Retry-After` header sent with `status`. */
  readonly retryAfter?: string | number
  /** Wait before sending headers (to trip header timeouts). */
  readonly delayHeadersMs?: number
  /** Wait between SSE events. */
  readonly chunkDelayMs?: number
  /** Send this many SSE events, then keep the connection open forever (JSON: half a body). */
  readonly hangAfterChunks?: number
  /** Send this many SSE events, then destroy the socket (JSON: half a body). */
  readonly resetAfterChunks?: number
  /** Destroy the socket without answering. */
  readonly resetBeforeHeaders?: boolean
  /** Send this many SSE events, then a data frame that is not JSON. */
  readonly malformedFrameAfter?: number
  /** Open the answer with a thinking block (which must never reach a caller). */
  readonly thinking?: boolean
  /** Prompt tokens reported as read from the cache. */
  readonly cacheReadTokens?: number
  /** Answer with this text instead of echoing the last user message. */
  readonly text?: string
  /** Send exactly this body instead of a generated answer. */
  readonly raw?: { readonly body: string; readonly contentType?: string; readonly status?: number }
}

export interface FakeAnthropic extends FakeServer<Behaviour> {
  /** Ends in `/v1`, like the real API. */
  readonly baseUrl: string
}

/** Upstream-only values a caller must never see. */
export const FAKE_MESSAGE_ID = "msg_fake_01XYZ"
export const FAKE_TOOL_USE_ID = "toolu_fake_01ABC"
export const FAKE_THINKING = "upstream-private chain of thought"
export const FAKE_SIGNATURE = "sig-fake-upstream-signature"
export const FAKE_REQUEST_ID = "req_fake_upstream_42"

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

type Json = Record<string, any>

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.map((block: Json) =>
      block?.type === "text" ? block.text : block?.type === "tool_result" ? textOf(block.content) : ""
    ).join(" ")
    : ""

const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length

// ---- validation: what the real API refuses ----------------------------------

const KNOWN_FIELDS = new Set([
  "model", "max_tokens", "messages", "system", "temperature", "top_p", "top_k", "stop_sequences",
  "stream", "metadata", "tools", "tool_choice", "thinking", "service_tier"
])

const invalid = (body: unknown): string | undefined => {
  if (typeof body !== "object" || body === null) return "body: not JSON"
  const json = body as Json
  const extra = Object.keys(json).find((key) => !KNOWN_FIELDS.has(key))
  if (extra) return `${extra}: Extra inputs are not permitted`
  if (typeof json.model !== "string") return "model: Field required"
  if (!Number.isInteger(json.max_tokens)) return "max_tokens: Field required"
  if (!Array.isArray(json.messages) || json.messages.length === 0) return "messages: at least one message is required"
  if (json.temperature !== undefined && (json.temperature < 0 || json.temperature > 1)) return "temperature: must be in [0, 1]"
  if (json.stop_sequences !== undefined && !Array.isArray(json.stop_sequences)) return "stop_sequences: must be a list"
  if (json.tool_choice !== undefined && !Array.isArray(json.tools)) return "tool_choice: requires tools"
  for (const tool of json.tools ?? []) {
    if (typeof tool?.name !== "string" || tool.input_schema?.type !== "object") return "tools: name and object input_schema required"
  }
  let previous: Json | undefined
  for (const [i, message] of json.messages.entries()) {
    if (message?.role !== (i % 2 === 0 ? "user" : "assistant")) return `messages.${i}: roles must alternate, starting with user`
    const blocks: Array<Json> = typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content
    if (!Array.isArray(blocks) || blocks.length === 0) return `messages.${i}: content must be non-empty`
    for (const block of blocks) {
      if (block.type === "text" && !block.text) return `messages.${i}: text content blocks must be non-empty`
      if (block.type === "tool_use" && (typeof block.input !== "object" || !/^[A-Za-z0-9_-]+$/.test(block.id))) {
        return `messages.${i}: bad tool_use block`
      }
      if (block.type === "tool_result") {
        const called = Array.isArray(previous?.content) && previous.content.some((b: Json) => b.type === "tool_use" && b.id === block.tool_use_id)
        if (!called) return `messages.${i}: tool_result without a matching tool_use in the previous message`
      }
      if (!["text", "image", "tool_use", "tool_result", "document"].includes(block.type)) return `messages.${i}: unknown block ${block.type}`
    }
    previous = message
  }
  return undefined
}

// ---- the scripted answer ------------------------------------------------------

type AnswerBlock =
  | { readonly type: "thinking" }
  | { readonly type: "text"; readonly text: string; readonly pieces: ReadonlyArray<string> }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown; readonly pieces: ReadonlyArray<string> }

interface Answer {
  readonly blocks: ReadonlyArray<AnswerBlock>
  readonly stopReason: string
  readonly stopSequence: string | null
  readonly usage: Json
}

const halves = (text: string) => [text.slice(0, Math.ceil(text.length / 2)), text.slice(Math.ceil(text.length / 2))]

/** The tool a model would call now, if any: forced ones always, `auto` unless it just got tool results. */
const toolToCall = (body: Json): Json | undefined => {
  const tools: Array<Json> = body.tools ?? []
  const choice: Json = body.tool_choice ?? { type: "auto" }
  if (tools.length === 0 || choice.type === "none") return undefined
  if (choice.type === "tool") return tools.find((tool) => tool.name === choice.name)
  const last = body.messages.at(-1)
  const answeringToolResult = Array.isArray(last?.content) && last.content.some((b: Json) => b.type === "tool_result")
  return choice.type === "any" || !answeringToolResult ? tools[0] : undefined
}

const answerFor = (body: Json, behaviour: Behaviour): Answer => {
  const systemText = typeof body.system === "string" ? body.system : textOf(body.system)
  const inputTokens = wordCount(systemText) + body.messages.reduce((n: number, m: Json) => n + wordCount(textOf(m.content)), 0) +
    3 + 20 * (body.tools?.length ?? 0)
  const usageFor = (output: number) => ({
    input_tokens: inputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: behaviour.cacheReadTokens ?? 0,
    output_tokens: output,
    service_tier: "standard"
  })
  const thinking: Array<AnswerBlock> = behaviour.thinking ? [{ type: "thinking" }] : []
  const tool = toolToCall(body)
  if (tool) {
    const input = sampleFromSchema(tool.input_schema)
    const json = JSON.stringify(input)
    return {
      blocks: [...thinking, { type: "tool_use", id: FAKE_TOOL_USE_ID, name: tool.name, input, pieces: halves(json) }],
      stopReason: "tool_use",
      stopSequence: null,
      usage: usageFor(2 + wordCount(json))
    }
  }
  const last = body.messages.at(-1)
  const answeringToolResult = Array.isArray(last?.content) && last.content.some((b: Json) => b.type === "tool_result")
  const lastText = textOf(last?.content)
  let text = behaviour.text ?? (answeringToolResult ? `The tool said: ${lastText}` : lastText)
  let stopReason = "end_turn"
  let stopSequence: string | null = null
  for (const stop of body.stop_sequences ?? []) {
    const at = text.indexOf(stop)
    if (at >= 0) {
      text = text.slice(0, at)
      stopReason = "stop_sequence"
      stopSequence = stop
    }
  }
  let pieces: Array<string> = text.match(/\S+\s*/g) ?? [text]
  if (pieces.length > body.max_tokens) {
    pieces = pieces.slice(0, body.max_tokens)
    text = pieces.join("")
    stopReason = "max_tokens"
  }
  return { blocks: [...thinking, { type: "text", text, pieces }], stopReason, stopSequence, usage: usageFor(pieces.length) }
}

const messageJson = (body: Json, answer: Answer) => ({
  id: FAKE_MESSAGE_ID,
  type: "message",
  role: "assistant",
  model: body.model,
  content: answer.blocks.map((block) =>
    block.type === "thinking"
      ? { type: "thinking", thinking: FAKE_THINKING, signature: FAKE_SIGNATURE }
      : block.type === "text"
      ? { type: "text", text: block.text, citations: null }
      : { type: "tool_use", id: block.id, name: block.name, input: block.input }
  ),
  stop_reason: answer.stopReason,
  stop_sequence: answer.stopSequence,
  usage: answer.usage
})

/** The SSE events of an answer, in the real API's order (with a `ping` after the first block opens). */
const events = (body: Json, answer: Answer): Array<Json> => {
  const out: Array<Json> = [{
    type: "message_start",
    message: { ...messageJson(body, answer), content: [], stop_reason: null, stop_sequence: null, usage: { ...answer.usage, output_tokens: 1 } }
  }]
  answer.blocks.forEach((block, index) => {
    const start = block.type === "thinking"
      ? { type: "thinking", thinking: "", signature: "" }
      : block.type === "text"
      ? { type: "text", text: "" }
      : { type: "tool_use", id: block.id, name: block.name, input: {} }
    out.push({ type: "content_block_start", index, content_block: start })
    if (index === 0) out.push({ type: "ping" })
    const deltas = block.type === "thinking"
      ? [{ type: "thinking_delta", thinking: FAKE_THINKING }, { type: "signature_delta", signature: FAKE_SIGNATURE }]
      : block.type === "text"
      ? block.pieces.map((text) => ({ type: "text_delta", text }))
      : block.pieces.map((partial_json) => ({ type: "input_json_delta", partial_json }))
    for (const delta of deltas) out.push({ type: "content_block_delta", index, delta })
    out.push({ type: "content_block_stop", index })
  })
  out.push({
    type: "message_delta",
    delta: { stop_reason: answer.stopReason, stop_sequence: answer.stopSequence },
    usage: { output_tokens: answer.usage.output_tokens }
  })
  out.push({ type: "message_stop" })
  return out
}

const frame = (event: Json) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

const errorTypes: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  529: "overloaded_error"
}

const errorJson = (status: number, message: string) => ({
  type: "error",
  error: { type: errorTypes[status] ?? "api_error", message }
})

// ---- the server ----------------------------------------------------------------

const answer = async (res: ServerResponse, body: unknown, behaviour: Behaviour, reset: () => void) => {
  const write = (text: string) => new Promise<void>((resolve) => (res.destroyed ? resolve() : res.write(text, () => resolve())))
  if (behaviour.resetBeforeHeaders) return reset()
  if (behaviour.delayHeadersMs) await sleep(behaviour.delayHeadersMs)
  if (res.destroyed) return
  const headers = { "request-id": FAKE_REQUEST_ID, "anthropic-organization-id": "org-fake" }
  if (behaviour.raw) {
    res.writeHead(behaviour.raw.status ?? 200, { ...headers, "content-type": behaviour.raw.contentType ?? "application/json" })
    return res.end(behaviour.raw.body)
  }
  const refusal = behaviour.status ? undefined : invalid(body)
  if (behaviour.status || refusal) {
    const status = behaviour.status ?? 400
    const error = behaviour.errorBody ?? errorJson(status, refusal ?? "fake upstream error")
    res.writeHead(status, {
      ...headers,
      "content-type": "application/json",
      ...(behaviour.retryAfter !== undefined ? { "retry-after": String(behaviour.retryAfter) } : {})
    })
    return res.end(typeof error === "string" ? error : JSON.stringify(error))
  }
  const json = body as Json
  const reply = answerFor(json, behaviour)
  if (!json.stream) {
    const text = JSON.stringify(messageJson(json, reply))
    res.writeHead(200, { ...headers, "content-type": "application/json" })
    if (behaviour.hangAfterChunks === undefined && behaviour.resetAfterChunks === undefined) return res.end(text)
    await write(text.slice(0, text.length / 2))
    if (behaviour.resetAfterChunks !== undefined) reset()
    return
  }
  res.writeHead(200, { ...headers, "content-type": "text/event-stream", "cache-control": "no-cache" })
  for (const [i, event] of events(json, reply).entries()) {
    if (i === behaviour.hangAfterChunks) return
    if (i === behaviour.resetAfterChunks) {
      // Let the events sent so far arrive before the connection breaks.
      await sleep(30)
      return reset()
    }
    if (i === behaviour.malformedFrameAfter) {
      // In a packet of its own, as a broken frame from a real upstream would usually be.
      await sleep(30)
      await write("event: content_block_delta\ndata: {\"type\": \"content_block_delta\", oops\n\n")
      return res.end()
    }
    if (i > 0 && behaviour.chunkDelayMs) await sleep(behaviour.chunkDelayMs)
    await write(frame(event))
  }
  if (!res.destroyed) res.end()
}

export const startFakeAnthropic = (): Promise<FakeAnthropic> =>
  startFakeServer<Behaviour>({
    basePath: "/v1",
    handle: ({ req, res, path, body, behaviour, reset }) => {
      if (req.method !== "POST" || !path.endsWith("/v1/messages")) {
        res.writeHead(404, { "content-type": "application/json" })
        return res.end(JSON.stringify(errorJson(404, `no route ${req.method} ${path}`)))
      }
      return answer(res, body, behaviour(), reset)
    }
  })

/** The fake upstream for the current scope. */
export const acquireFakeAnthropic = Effect.acquireRelease(
  Effect.promise(startFakeAnthropic),
  (upstream) => Effect.promise(upstream.close)
)
