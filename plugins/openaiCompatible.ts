/**
 * Plugin for any upstream speaking the OpenAI chat-completions (and
 * embeddings) wire format (OpenAI, vLLM, Ollama, llama.cpp, ...). Responses are rebuilt from known
 * fields only, so nothing upstream-specific reaches our callers.
 */
import * as Sse from "@effect/experimental/Sse"
import type { Readable } from "node:stream"
import { Deferred, Effect, Option, Stream } from "effect"
import { Agent, type Dispatcher } from "undici"
import type { ChatChunk, FinishReason, ToolCall, ToolCallDelta, Usage } from "../services/Chat.ts"
import type { ProviderConfig } from "../services/Config.ts"
import type { EmbedCall, EmbedResult } from "../services/Embeddings.ts"
import {
  type ProviderAdapter,
  ProviderConfigError,
  type ProviderPlugin,
  registerPlugin,
  type UpstreamCall,
  type UpstreamCompletion,
  UpstreamFailure
} from "../services/Providers.ts"

type Json = Record<string, unknown>
type ResponseData = Dispatcher.ResponseData

// ---- request -------------------------------------------------------------

const upstreamBody = (call: UpstreamCall, streaming: boolean): Json => {
  // Our extensions stay here; `stream*` is decided by the adapter method.
  const { models: _models, route: _route, privacy: _privacy, stream: _stream, stream_options, ...passThrough } =
    call.request
  return streaming
    ? { ...passThrough, model: call.upstreamModel, stream: true, stream_options: { ...stream_options, include_usage: true } }
    : { ...passThrough, model: call.upstreamModel }
}

const endpointOf = (baseUrl: string | undefined) => {
  if (baseUrl === undefined) {
    return Effect.fail(new ProviderConfigError({ field: "baseUrl", reason: "the openai-compatible plugin needs a baseUrl" }))
  }
  return Effect.try({
    try: () => {
      const url = new URL(baseUrl)
      const base = url.pathname.replace(/\/+$/, "")
      return { origin: url.origin, path: `${base}/chat/completions`, embeddingsPath: `${base}/embeddings` }
    },
    catch: () => new ProviderConfigError({ field: "baseUrl", reason: `not a valid URL: ${baseUrl}` })
  })
}

const apiKeyOf = (apiKeyEnv: string | undefined, env: Readonly<Record<string, string | undefined>>) => {
  if (apiKeyEnv === undefined) return Effect.succeed(undefined)
  const key = env[apiKeyEnv]
  return key
    ? Effect.succeed(key)
    : Effect.fail(new ProviderConfigError({ field: "apiKeyEnv", reason: `environment variable ${apiKeyEnv} is not set` }))
}

// ---- failures ------------------------------------------------------------

const timeoutCodes = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT", "ETIMEDOUT"])

const failureOf = (error: unknown): UpstreamFailure => {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined
  const detail = `${error instanceof Error ? error.message : String(error)}${typeof code === "string" ? ` (${code})` : ""}`
  return new UpstreamFailure({ kind: typeof code === "string" && timeoutCodes.has(code) ? "timeout" : "connection", detail })
}

const protocolFailure = (detail: string) => new UpstreamFailure({ kind: "protocol", detail })

/** Reads a bounded prefix of an error body; never fails. */
const snippetOf = async (body: AsyncIterable<Uint8Array>): Promise<string> => {
  const decoder = new TextDecoder()
  let text = ""
  try {
    for await (const bytes of body) {
      text += decoder.decode(bytes, { stream: true })
      if (text.length > 4096) break
    }
  } catch {
    // The status is what matters; a broken error body adds nothing.
  }
  return text.replace(/\s+/g, " ").trim().slice(0, 200)
}

const statusFailure = (response: ResponseData) =>
  Effect.promise(() => snippetOf(response.body)).pipe(
    Effect.flatMap((snippet) =>
      new UpstreamFailure({
        kind: "status",
        status: response.statusCode,
        detail: `upstream answered ${response.statusCode}${snippet ? `: ${snippet}` : ""}`
      })
    )
  )

// ---- response normalisation (plain field picking: this is the hot path) --

class Malformed extends Error {}

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const recordOf = (u: unknown, what: string): Json => {
  if (isRecord(u)) return u
  throw new Malformed(`${what} is not an object`)
}

const arrayOf = (u: unknown, what: string): Array<unknown> => {
  if (Array.isArray(u)) return u
  throw new Malformed(`${what} is not an array`)
}

const stringOr = <A>(u: unknown, fallback: A): string | A => (typeof u === "string" ? u : fallback)
const intOr = (u: unknown, fallback: number): number => (Number.isInteger(u) ? (u as number) : fallback)

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

const nowSeconds = () => Math.floor(Date.now() / 1000)

/** Throws if the body is an upstream error report rather than a completion. */
const rejectErrorBody = (json: Json) => {
  if (json.error !== undefined && json.error !== null && json.choices === undefined) {
    const message = isRecord(json.error) ? stringOr(json.error.message, "") : String(json.error)
    throw new Malformed(`upstream reported an error: ${message.slice(0, 200)}`)
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
    const message = isRecord(json.error) ? stringOr(json.error.message, "") : String(json.error)
    throw new Malformed(`upstream reported an error: ${message.slice(0, 200)}`)
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

const fail = (reason: string): never => {
  throw new Malformed(reason)
}

const protocolFailureOf = (error: unknown) =>
  protocolFailure(error instanceof Malformed ? error.message : `invalid JSON from upstream: ${String(error)}`)

// ---- SSE -----------------------------------------------------------------

/**
 * The response body as a stream. Releasing destroys the body at once:
 * `fromAsyncIterable` would await `return()`, which queues behind a pending read.
 */
const bodyBytes = (body: Readable): Stream.Stream<Uint8Array, UpstreamFailure> =>
  Stream.unwrapScoped(Effect.map(
    Effect.acquireRelease(Effect.sync(() => body[Symbol.asyncIterator]()), () => Effect.sync(() => body.destroy())),
    (iterator) =>
      Stream.repeatEffectOption(
        Effect.tryPromise({ try: () => iterator.next(), catch: (error) => Option.some(failureOf(error)) }).pipe(
          Effect.flatMap((next) => (next.done ? Effect.fail(Option.none()) : Effect.succeed(next.value as Uint8Array)))
        )
      )
  ))

/** How long to let the response end after `[DONE]`, so its connection stays reusable. */
const drainAfterDone = "250 millis"

/** Chat chunks from an SSE body; one parser per stream, ends at `data: [DONE]`. */
const sseChunks = (body: Readable, fallbackModel: string): Stream.Stream<ChatChunk, UpstreamFailure> =>
  Stream.unwrap(Effect.map(Deferred.make<void>(), (sawDone) => {
    const decoder = new TextDecoder()
    let frames: Array<Sse.Event> = []
    let done = false
    // The parser, not `Sse.makeChannel`: the channel dies on oversized events and sleeps on `retry:`.
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") frames.push(event)
    })
    const feed = (bytes: Uint8Array): Effect.Effect<Array<ChatChunk>, UpstreamFailure> => {
      if (done) return Effect.succeed([])
      const tooLarge = parser.feed(decoder.decode(bytes, { stream: true }))
      if (tooLarge) return Effect.fail(protocolFailure(tooLarge.message))
      const out: Array<ChatChunk> = []
      try {
        for (const frame of frames) {
          if (frame.event === "error") throw new Malformed(`upstream error event: ${frame.data.slice(0, 200)}`)
          // Empty data frames are keep-alives; named events are not chat chunks.
          if (frame.event !== "message" || frame.data === "") continue
          if (frame.data === "[DONE]") {
            done = true
            break
          }
          out.push(chunkOf(JSON.parse(frame.data), fallbackModel))
        }
      } catch (error) {
        return Effect.fail(protocolFailureOf(error))
      } finally {
        frames = []
      }
      return done ? Effect.as(Deferred.succeed(sawDone, undefined), out) : Effect.succeed(out)
    }
    // After [DONE] the body is read to its end (bounded) rather than destroyed.
    return bodyBytes(body).pipe(
      Stream.interruptWhen(Effect.zipRight(Deferred.await(sawDone), Effect.sleep(drainAfterDone))),
      Stream.catchAll((failure) => (done ? Stream.empty : Stream.fail(failure))),
      Stream.mapConcatEffect(feed),
      Stream.concat(Stream.suspend(() => done ? Stream.empty : Stream.fail(protocolFailure("upstream stream ended before [DONE]"))))
    )
  }))

// ---- adapter -------------------------------------------------------------

const make = (provider: ProviderConfig, env: Readonly<Record<string, string | undefined>>) =>
  Effect.gen(function*() {
    const { embeddingsPath, origin, path } = yield* endpointOf(provider.baseUrl)
    const apiKey = yield* apiKeyOf(provider.apiKeyEnv, env)
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Agent({
          keepAliveTimeout: 30_000,
          connect: { timeout: provider.timeoutMs },
          headersTimeout: provider.timeoutMs,
          bodyTimeout: provider.timeoutMs
        })
      ),
      // Requests still running belong to scopes that are closing too.
      (agent) => Effect.promise(() => agent.destroy().catch(() => undefined))
    )
    const headersFor = (accept: string): Record<string, string> => ({
      "content-type": "application/json",
      accept,
      ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {})
    })
    const jsonHeaders = headersFor("application/json")
    const sseHeaders = headersFor("text/event-stream")

    /** Sends the call; the upstream request is aborted when the scope closes. */
    const post = (body: Json, headers: Record<string, string>, to: string = path) =>
      Effect.gen(function*() {
        const controller = yield* Effect.acquireRelease(
          Effect.sync(() => new AbortController()),
          (controller) => Effect.sync(() => controller.abort())
        )
        const response = yield* Effect.tryPromise({
          try: () =>
            agent.request({ origin, path: to, method: "POST", headers, body: JSON.stringify(body), signal: controller.signal }),
          catch: failureOf
        })
        if (response.statusCode < 200 || response.statusCode >= 300) return yield* statusFailure(response)
        return response
      })

    const complete: ProviderAdapter["complete"] = (call) =>
      Effect.scoped(
        Effect.gen(function*() {
          const response = yield* post(upstreamBody(call, false), jsonHeaders)
          const text = yield* Effect.tryPromise({ try: () => response.body.text(), catch: failureOf })
          return yield* Effect.try({
            try: () => completionOf(JSON.parse(text), call.upstreamModel),
            catch: protocolFailureOf
          })
        })
      )

    const stream: ProviderAdapter["stream"] = (call) =>
      post(upstreamBody(call, true), sseHeaders).pipe(
        Effect.map((response) => sseChunks(response.body, call.upstreamModel))
      )

    const embed: NonNullable<ProviderAdapter["embed"]> = (call) =>
      Effect.scoped(
        Effect.gen(function*() {
          const response = yield* post(embeddingsBody(call), jsonHeaders, embeddingsPath)
          const text = yield* Effect.tryPromise({ try: () => response.body.text(), catch: failureOf })
          return yield* Effect.try({
            try: () => embeddingsOf(JSON.parse(text), call.input.length),
            catch: protocolFailureOf
          })
        })
      )

    return { complete, stream, embed } satisfies ProviderAdapter
  })

export const plugin: ProviderPlugin = { id: "openai-compatible", make }

export const OpenAiCompatiblePlugin = registerPlugin(plugin)
