/**
 * Plugin for any upstream speaking the OpenAI chat-completions (and
 * embeddings) wire format: OpenAI, vLLM, Ollama, llama.cpp, ... Requests pass
 * through nearly as they are (`request.ts`); answers are rebuilt from known
 * fields only (`response.ts`, `stream.ts`, `embed.ts`).
 */
import { Effect, Schema } from "effect"
import type { ProviderConfig } from "../../../services/Config.ts"
import { type ProviderAdapter, type ProviderPlugin, registerPlugin } from "../../../services/Providers.ts"
import { protocolFailureOf, secondsOf } from "../../support/json.ts"
import { sseStream } from "../../support/sse.ts"
import { apiKeyOf, baseUrlOf, makeUpstreamHttp, requestHeaders } from "../../support/upstreamHttp.ts"
import { embeddingsBody, embeddingsOf } from "./embed.ts"
import { chatBody } from "./request.ts"
import { completionOf } from "./response.ts"
import { translator } from "./stream.ts"

/** Headers the adapter sets itself; static headers may not replace them. */
const RESERVED_HEADERS = new Set(["authorization", "content-type", "accept", "content-length", "host"])

const HeaderName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, { message: () => "not an HTTP header name" }),
  Schema.filter((name) => !RESERVED_HEADERS.has(name.toLowerCase()) || `${name} is set by the plugin itself`)
)

export const OpenAiCompatibleOptions = Schema.Struct({
  /** Sent as `OpenAI-Organization` (OpenAI accounts in several organizations). */
  organization: Schema.optional(Schema.String.pipe(Schema.nonEmptyString())),
  /** Sent as `OpenAI-Project`. */
  project: Schema.optional(Schema.String.pipe(Schema.nonEmptyString())),
  /** Static headers sent with every request (a gateway's routing header, a vendor's API version, ...). */
  headers: Schema.optional(Schema.Record({ key: HeaderName, value: Schema.String }))
})
export type OpenAiCompatibleOptions = typeof OpenAiCompatibleOptions.Type

/** Header names lower-cased, so a configured header cannot sit beside our own under another spelling. */
const staticHeaders = (options: OpenAiCompatibleOptions): Record<string, string> => ({
  ...Object.fromEntries(Object.entries(options.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value])),
  ...(options.organization !== undefined ? { "openai-organization": options.organization } : {}),
  ...(options.project !== undefined ? { "openai-project": options.project } : {})
})

const make = (
  provider: ProviderConfig,
  options: OpenAiCompatibleOptions,
  env: Readonly<Record<string, string | undefined>>
) =>
  Effect.gen(function*() {
    const { basePath, origin } = yield* baseUrlOf(provider, "openai-compatible")
    const apiKey = yield* apiKeyOf(provider, env)
    const http = yield* makeUpstreamHttp(origin, provider.timeoutMs)
    const { json: jsonHeaders, sse: sseHeaders } = requestHeaders({
      ...staticHeaders(options),
      ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {})
    })
    const chatPath = `${basePath}/chat/completions`

    // Chains, not generators: every call runs one of these.
    const complete: ProviderAdapter["complete"] = (call) =>
      http.postReading(chatPath, chatBody(call, false), jsonHeaders, (text, clock) =>
        completionOf(JSON.parse(text), call.upstreamModel, secondsOf(clock)), call.deadline?.endAt)

    const stream: ProviderAdapter["stream"] = (call) =>
      Effect.flatMap(http.postStream(chatPath, chatBody(call, true), sseHeaders, call.deadline?.endAt), (body) =>
        Effect.clockWith((clock) =>
          Effect.succeed(sseStream(body, translator(call.upstreamModel, secondsOf(clock)), { endMarker: true, deadline: call.deadline }))
        ))

    const embed: NonNullable<ProviderAdapter["embed"]> = (call) =>
      Effect.gen(function*() {
        const text = yield* http.postText(`${basePath}/embeddings`, embeddingsBody(call), jsonHeaders)
        return yield* Effect.try({ try: () => embeddingsOf(JSON.parse(text), call.input.length), catch: protocolFailureOf })
      })

    return { complete, keepsDeadline: true, stream, embed } satisfies ProviderAdapter
  })

export const plugin: ProviderPlugin<OpenAiCompatibleOptions> = { id: "openai-compatible", options: OpenAiCompatibleOptions, make }

export const OpenAiCompatiblePlugin = registerPlugin(plugin)
