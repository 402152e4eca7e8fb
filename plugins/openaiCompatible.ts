/**
 * Plugin for any upstream speaking the OpenAI chat-completions (and
 * embeddings) wire format (OpenAI, vLLM, Ollama, llama.cpp, ...). Responses are rebuilt from known
 * fields only, so nothing upstream-specific reaches our callers.
 */
import { Effect } from "effect"
import type { ChatChunk, FinishReason, ToolCall, ToolCallDelta, Usage } from "../services/Chat.ts"
import type { ProviderConfig } from "../services/Config.ts"
import type { EmbedCall, EmbedResult } from "../services/Embeddings.ts"
import {
  type ProviderAdapter,
  type ProviderPlugin,
  registerPlugin,
  type UpstreamCall,
  type UpstreamCompletion
} from "../services/Providers.ts"
import { NoOptions } from "../services/Registry.ts"
import {
  arrayOf,
  errorKindOf,
  fail,
  intOr,
  isRecord,
  type Json,
  Malformed,
  nowSeconds,
  protocolFailureOf,
  recordOf,
  stringOr
} from "./support/json.ts"
import { type SseEvent, sseStream, type Translation } from "./support/sse.ts"
import { apiKeyOf, baseUrlOf, makeUpstreamHttp, requestHeaders } from "./support/upstreamHttp.ts"

// ---- request -------------------------------------------------------------

const upstreamBody = (call: UpstreamCall, streaming: boolean): Json => {
  // Our extensions stay here; `stream*` is decided by the adapter method.
  const { models: _models, route: _route, privacy: _privacy, stream: _stream, stream_options, ...passThrough } =
    call.request
  return streaming
    ? { ...passThrough, model: call.upstreamModel, stream: true, stream_options: { ...stream_options, include_usage: true } }
    : { ...passThrough, model: call.upstreamModel }
}

// ---- response normalisation (plain field picking: this is the hot path) --

const finishReasonOf = (u: unknown): FinishReason | null => {
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

const usageOf = (u: unknown): Usage | undefined => {
  if (!isRecord(u) || !Number.isInteger(u.prompt_tokens) || !Number.isInteger(u.completion_tokens)) return undefined
  const prompt_tokens = u.prompt_tokens as number
  const completion_tokens = u.completion_tokens as number
  return { prompt_tokens, completion_tokens, total_tokens: intOr(u.total_tokens, prompt_tokens + completion_tokens) }
}

const argumentsOf = (u: unknown): string => (typeof u === "string" ? u : JSON.stringify(u ?? {}))

const toolCallOf = (u: unknown, i: number): ToolCall => {
  const call = recordOf(u, "tool call")
  const fn = recordOf(call.function, "tool call function")
  return {
    id: stringOr(call.id, `call_${i}`),
    type: "function",
    function: { name: stringOr(fn.name, ""), arguments: argumentsOf(fn.arguments) }
  }
}

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

/** Throws if the body is an upstream error report rather than a completion. */
const rejectErrorBody = (json: Json) => {
  if (json.error !== undefined && json.error !== null && json.choices === undefined) {
    throw new Malformed(`upstream reported an error (${errorKindOf(json.error)})`)
  }
}

const completionOf = (u: unknown, fallbackModel: string): UpstreamCompletion => {
  const json = recordOf(u, "completion")
  rejectErrorBody(json)
  const usage = usageOf(json.usage)
  const choices = arrayOf(json.choices, "choices")
  if (choices.length === 0) throw new Malformed("completion has no choices")
  return {
    id: stringOr(json.id, "") || fail("completion has no id"),
    object: "chat.completion",
    created: intOr(json.created, nowSeconds()),
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

const chunkOf = (u: unknown, fallbackModel: string): ChatChunk => {
  const json = recordOf(u, "chunk")
  rejectErrorBody(json)
  const usage = usageOf(json.usage)
  return {
    id: stringOr(json.id, "") || fail("chunk has no id"),
    object: "chat.completion.chunk",
    created: intOr(json.created, nowSeconds()),
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

/** Floats only, whatever we are asked for: the caller's encoding is applied by the gateway. */
const embeddingsBody = (call: EmbedCall): Json => ({
  model: call.upstreamModel,
  input: call.input,
  encoding_format: "float",
  ...(call.dimensions !== undefined ? { dimensions: call.dimensions } : {}),
  ...(call.user !== undefined ? { user: call.user } : {})
})

const vectorOf = (u: unknown): Array<number> =>
  arrayOf(u, "embedding").map((value) => {
    if (typeof value === "number" && Number.isFinite(value)) return value
    throw new Malformed("embedding holds a value that is not a finite number")
  })

const embeddingsOf = (u: unknown, inputs: number): EmbedResult => {
  const json = recordOf(u, "embeddings response")
  if (json.error !== undefined && json.error !== null && json.data === undefined) {
    throw new Malformed(`upstream reported an error (${errorKindOf(json.error)})`)
  }
  const usage = recordOf(json.usage, "usage")
  if (!Number.isInteger(usage.prompt_tokens)) throw new Malformed("embeddings response has no usage")
  const embeddings = new Array<Array<number>>(inputs)
  arrayOf(json.data, "data").forEach((d, i) => {
    const item = recordOf(d, "embedding item")
    const index = intOr(item.index, i)
    if (index < 0 || index >= inputs || embeddings[index] !== undefined) throw new Malformed(`bad embedding index ${index}`)
    embeddings[index] = vectorOf(item.embedding)
  })
  for (let i = 0; i < inputs; i++) if (embeddings[i] === undefined) throw new Malformed(`no embedding for input ${i}`)
  return { embeddings, promptTokens: usage.prompt_tokens as number }
}

// ---- SSE -----------------------------------------------------------------

/** Chat chunks from OpenAI's SSE events; the stream is complete at `data: [DONE]`. */
const translateEvent = (fallbackModel: string) => (event: SseEvent): Translation<ChatChunk> => {
  if (event.event === "error") throw new Malformed("upstream sent an error event")
  // Empty data frames are keep-alives; named events are not chat chunks.
  if (event.event !== "message" || event.data === "") return { out: [], done: false }
  if (event.data === "[DONE]") return { out: [], done: true }
  return { out: [chunkOf(JSON.parse(event.data), fallbackModel)], done: false }
}

// ---- adapter -------------------------------------------------------------

const make = (provider: ProviderConfig, env: Readonly<Record<string, string | undefined>>) =>
  Effect.gen(function*() {
    const { basePath, origin } = yield* baseUrlOf(provider, "openai-compatible")
    const apiKey = yield* apiKeyOf(provider, env)
    const http = yield* makeUpstreamHttp(origin, provider.timeoutMs)
    const { json: jsonHeaders, sse: sseHeaders } = requestHeaders(apiKey ? { authorization: `Bearer ${apiKey}` } : {})
    const chatPath = `${basePath}/chat/completions`

    const complete: ProviderAdapter["complete"] = (call) =>
      Effect.scoped(
        Effect.gen(function*() {
          const response = yield* http.post(chatPath, upstreamBody(call, false), jsonHeaders)
          const text = yield* http.text(response)
          return yield* Effect.try({
            try: () => completionOf(JSON.parse(text), call.upstreamModel),
            catch: protocolFailureOf
          })
        })
      )

    const stream: ProviderAdapter["stream"] = (call) =>
      http.post(chatPath, upstreamBody(call, true), sseHeaders).pipe(
        Effect.map((response) => sseStream(response.body, translateEvent(call.upstreamModel), { endMarker: true }))
      )

    const embed: NonNullable<ProviderAdapter["embed"]> = (call) =>
      Effect.scoped(
        Effect.gen(function*() {
          const response = yield* http.post(`${basePath}/embeddings`, embeddingsBody(call), jsonHeaders)
          const text = yield* http.text(response)
          return yield* Effect.try({
            try: () => embeddingsOf(JSON.parse(text), call.input.length),
            catch: protocolFailureOf
          })
        })
      )

    return { complete, stream, embed } satisfies ProviderAdapter
  })

export const plugin: ProviderPlugin = { id: "openai-compatible", options: NoOptions, make }

export const OpenAiCompatiblePlugin = registerPlugin(plugin)
