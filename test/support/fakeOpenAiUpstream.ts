/**
 * A fake OpenAI-compatible upstream on a real HTTP server (127.0.0.1, random
 * port), scriptable per request, for adapter and end-to-end tests.
 */
import type { ServerResponse } from "node:http"
import { Context, Effect, Layer } from "effect"
import { type FakeServer, startFakeServer } from "./fakeServer.ts"

export type { RecordedRequest } from "./fakeServer.ts"

/** How to answer; the empty behaviour is a well-behaved upstream. */
export interface Behaviour {
  /** Answer with this status and `errorBody` (default: an OpenAI-style error object). */
  readonly status?: number
  readonly errorBody?: unknown
  /** Wait before sending headers (to trip header timeouts), or as long as the request's body says. */
  readonly delayHeadersMs?: number | ((body: Record<string, any>) => number)
  /** Wait between SSE frames. */
  readonly chunkDelayMs?: number
  /** Send this many SSE data frames, then keep the connection open forever (JSON: half a body). */
  readonly hangAfterChunks?: number
  /**
   * After `hangAfterChunks` data frames (default none), send one byte (a space, or a comment
   * line's worth) every this many ms until the client leaves: an upstream that never finishes.
   */
  readonly trickleEveryMs?: number
  /** Wait between `data: [DONE]` and ending the response (as separate packets do). */
  readonly endDelayAfterDoneMs?: number
  /** Send `: keep-alive` comment frames around every data frame. */
  readonly keepAliveComments?: boolean
  /** Send exactly this body instead of a generated answer. */
  readonly raw?: { readonly body: string; readonly contentType?: string; readonly status?: number }
  /** With `status`: a `Retry-After` header, in seconds. */
  readonly retryAfter?: number
  /** Destroy the connection before any answer (a reset). */
  readonly resetBeforeHeaders?: boolean
  /** Streams: destroy the connection after this many SSE data frames. */
  readonly resetAfterChunks?: number
  /** Streams: send a frame that is not JSON after this many data frames. */
  readonly malformedFrameAfter?: number
  /**
   * Report this usage instead of the honest one (a function of the request, so concurrent calls
   * can differ); `undefined` reports none (no usage field, no usage chunk).
   */
  readonly usage?: (body: Record<string, any>, honest: Record<string, unknown>) => unknown
}

export interface FakeOpenAi extends FakeServer<Behaviour> {
  /** Ends in `/v1`, like real upstreams. */
  readonly baseUrl: string
}

export const FAKE_FINGERPRINT = "fp_fake_upstream"
export const FAKE_PROVIDER_NAME = "acme-secret"

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

type Json = Record<string, any>

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.filter((part) => part?.type === "text").map((part) => part.text).join("")
    : ""

const lastUserText = (body: Json): string =>
  textOf([...(body.messages ?? [])].reverse().find((m: Json) => m?.role === "user")?.content)

/** A value satisfying a JSON schema's required properties (simple types only). */
export const sampleFromSchema = (schema: Json | undefined): unknown => {
  switch (schema?.type) {
    case "object": {
      const required: Array<string> = schema.required ?? Object.keys(schema.properties ?? {})
      return Object.fromEntries(required.map((key) => [key, sampleFromSchema(schema.properties?.[key])]))
    }
    case "array":
      return []
    case "number":
    case "integer":
      return 1
    case "boolean":
      return true
    case "null":
      return null
    default:
      return Array.isArray(schema?.enum) ? schema.enum[0] : "text"
  }
}

const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length

interface Answer {
  readonly content: string | null
  readonly toolCall?: { readonly id: string; readonly name: string; readonly arguments: string }
  readonly pieces: ReadonlyArray<string>
  readonly usage: Json
}

const answerFor = (body: Json): Answer => {
  const tool = body.tools?.[0]?.function
  const promptTokens = (body.messages ?? []).reduce((n: number, m: Json) => n + wordCount(textOf(m?.content)), 0) + 1
  const usageFor = (completion: number) => ({
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: promptTokens + completion,
    prompt_tokens_details: { cached_tokens: 0 }
  })
  if (tool && body.tool_choice !== "none") {
    const args = JSON.stringify(sampleFromSchema(tool.parameters))
    return {
      content: null,
      toolCall: { id: "call_fake_1", name: tool.name, arguments: args },
      pieces: [args.slice(0, Math.ceil(args.length / 2)), args.slice(Math.ceil(args.length / 2))],
      usage: usageFor(2)
    }
  }
  const content = body.response_format?.type === "json_schema"
    ? JSON.stringify(sampleFromSchema(body.response_format.json_schema?.schema))
    : lastUserText(body)
  const pieces = content.match(/\S+\s*/g) ?? [content]
  return { content, pieces, usage: usageFor(pieces.length) }
}

/** Fields a real upstream adds that the gateway must not reveal. */
const envelope = (body: Json, object: string) => ({
  id: "chatcmpl-fake-1",
  object,
  created: 1_700_000_000,
  model: body.model,
  system_fingerprint: FAKE_FINGERPRINT,
  provider: FAKE_PROVIDER_NAME
})

const completionJson = (body: Json, answer: Answer) => ({
  ...envelope(body, "chat.completion"),
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content: answer.content,
      refusal: null,
      ...(answer.toolCall
        ? {
          tool_calls: [{
            id: answer.toolCall.id,
            type: "function",
            function: { name: answer.toolCall.name, arguments: answer.toolCall.arguments }
          }]
        }
        : {}),
      reasoning_content: "upstream-private reasoning"
    },
    finish_reason: answer.toolCall ? "tool_calls" : "stop",
    native_finish_reason: "STOP",
    logprobs: null
  }],
  usage: answer.usage
})

const chunkJsons = (body: Json, answer: Answer): Array<Json> => {
  const chunk = (delta: Json, finish_reason: string | null = null) => ({
    ...envelope(body, "chat.completion.chunk"),
    choices: [{ index: 0, delta, finish_reason, native_finish_reason: finish_reason }],
    ...(body.stream_options?.include_usage ? { usage: null } : {})
  })
  const deltas = answer.toolCall
    ? [
      { role: "assistant", content: null, tool_calls: [{ index: 0, id: answer.toolCall.id, type: "function", function: { name: answer.toolCall.name, arguments: "" } }] },
      ...answer.pieces.map((piece) => ({ tool_calls: [{ index: 0, function: { arguments: piece } }] }))
    ]
    : [{ role: "assistant", content: "" }, ...answer.pieces.map((content) => ({ content }))]
  const chunks: Array<Json> = [...deltas.map((delta) => chunk(delta)), chunk({}, answer.toolCall ? "tool_calls" : "stop")]
  if (body.stream_options?.include_usage && answer.usage !== undefined) {
    chunks.push({ ...envelope(body, "chat.completion.chunk"), choices: [], usage: answer.usage })
  }
  return chunks
}

const write = (res: ServerResponse, text: string) => {
  if (!res.destroyed) res.write(text)
}

/** One byte every `everyMs` until the client leaves (a JSON body's whitespace, an SSE comment's `:`). */
const trickle = async (res: ServerResponse, everyMs: number, byte: string) => {
  while (!res.destroyed && !res.writableEnded) {
    await sleep(everyMs)
    write(res, byte)
  }
}

/** Waits as long as `behaviour` says before answering `body`'s headers. */
const headersDelay = async (behaviour: Behaviour, body: Json) => {
  const delayMs = typeof behaviour.delayHeadersMs === "function" ? behaviour.delayHeadersMs(body) : behaviour.delayHeadersMs ?? 0
  if (delayMs > 0) await sleep(delayMs)
}

const answer = async (res: ServerResponse, body: Json, behaviour: Behaviour, reset: () => void) => {
  await headersDelay(behaviour, body)
  if (res.destroyed) return
  if (behaviour.resetBeforeHeaders) return reset()
  if (behaviour.raw) {
    res.writeHead(behaviour.raw.status ?? 200, { "content-type": behaviour.raw.contentType ?? "application/json" })
    return res.end(behaviour.raw.body)
  }
  if (behaviour.status) {
    const error = behaviour.errorBody ?? { error: { message: "fake upstream error", type: "fake_error", code: behaviour.status } }
    res.writeHead(behaviour.status, {
      "content-type": "application/json",
      ...(behaviour.retryAfter !== undefined ? { "retry-after": String(behaviour.retryAfter) } : {})
    })
    return res.end(typeof error === "string" ? error : JSON.stringify(error))
  }
  const honest = answerFor(body)
  const reply = behaviour.usage === undefined ? honest : { ...honest, usage: behaviour.usage(body, honest.usage) as Json }
  if (!body.stream) {
    const json = JSON.stringify(completionJson(body, reply))
    res.writeHead(200, { "content-type": "application/json" })
    if (behaviour.trickleEveryMs !== undefined) return trickle(res, behaviour.trickleEveryMs, " ")
    if (behaviour.hangAfterChunks !== undefined) return write(res, json.slice(0, json.length / 2))
    return res.end(json)
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  const keepAlive = () => behaviour.keepAliveComments && write(res, ": keep-alive\n\n")
  const frames = chunkJsons(body, reply)
  for (const [i, frame] of frames.entries()) {
    if (i === (behaviour.hangAfterChunks ?? (behaviour.trickleEveryMs !== undefined ? 0 : undefined))) {
      return behaviour.trickleEveryMs !== undefined ? trickle(res, behaviour.trickleEveryMs, ":") : undefined
    }
    // Let the frames already written reach the client first: a destroy discards unflushed writes.
    if (i === behaviour.resetAfterChunks) return sleep(30).then(reset)
    if (i === behaviour.malformedFrameAfter) await sleep(30).then(() => write(res, "data: {\"choices\": [\n\n"))
    if (i > 0 && behaviour.chunkDelayMs) await sleep(behaviour.chunkDelayMs)
    keepAlive()
    write(res, `data: ${JSON.stringify(frame)}\n\n`)
  }
  if (behaviour.hangAfterChunks !== undefined && behaviour.hangAfterChunks >= frames.length) return
  keepAlive()
  write(res, "data: [DONE]\n\n")
  if (behaviour.endDelayAfterDoneMs) await sleep(behaviour.endDelayAfterDoneMs)
  if (!res.destroyed) res.end()
}

/** `/embeddings`: one small vector per input (its word count, then 0.5s), and the upstream's own extras. */
const answerEmbeddings = async (res: ServerResponse, body: Json, behaviour: Behaviour, reset: () => void) => {
  await headersDelay(behaviour, body)
  if (res.destroyed) return
  if (behaviour.raw || behaviour.status) return answer(res, body, behaviour, reset)
  const inputs: Array<string> = typeof body.input === "string" ? [body.input] : Array.isArray(body.input) ? body.input : []
  const dimensions = Number.isInteger(body.dimensions) ? body.dimensions : 4
  const promptTokens = inputs.reduce((n, text) => n + wordCount(String(text)), 0)
  res.writeHead(200, { "content-type": "application/json" })
  res.end(JSON.stringify({
    object: "list",
    data: inputs.map((text, index) => ({
      object: "embedding",
      index,
      embedding: Array.from({ length: dimensions }, (_, i) => (i === 0 ? wordCount(String(text)) : 0.5))
    })),
    model: body.model,
    provider: FAKE_PROVIDER_NAME,
    system_fingerprint: FAKE_FINGERPRINT,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens }
  }))
}

export const startFakeOpenAi = (): Promise<FakeOpenAi> =>
  startFakeServer<Behaviour>({
    basePath: "/v1",
    handle: ({ req, res, path, body, behaviour, reset }) => {
      const json: Json = typeof body === "object" && body !== null ? body : {}
      if (req.method === "POST" && path.endsWith("/embeddings")) return answerEmbeddings(res, json, behaviour(), reset)
      if (req.method !== "POST" || !path.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" })
        return res.end(JSON.stringify({ error: { message: `no route ${req.method} ${path}` } }))
      }
      return answer(res, json, behaviour(), reset)
    }
  })

/** The fake upstream for the current scope. */
export const acquireFakeOpenAi = Effect.acquireRelease(
  Effect.promise(startFakeOpenAi),
  (upstream) => Effect.promise(upstream.close)
)

export class FakeOpenAiUpstream extends Context.Tag("test/FakeOpenAiUpstream")<FakeOpenAiUpstream, FakeOpenAi>() {
  static readonly layer = Layer.scoped(FakeOpenAiUpstream, acquireFakeOpenAi)
}
