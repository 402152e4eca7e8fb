/**
 * Plugin for any upstream speaking the OpenAI chat-completions (and
 * embeddings) wire format: OpenAI, vLLM, Ollama, llama.cpp, ... Requests pass
 * through nearly as they are (`request.ts`); answers are rebuilt from known
 * fields only (`response.ts`, `stream.ts`, `embed.ts`).
 */
import { Effect } from "effect"
import type { ProviderConfig } from "../../../services/Config.ts"
import { type ProviderAdapter, type ProviderPlugin, registerPlugin } from "../../../services/Providers.ts"
import { NoOptions } from "../../../services/Registry.ts"
import { nowSeconds, protocolFailureOf } from "../../support/json.ts"
import { sseStream } from "../../support/sse.ts"
import { apiKeyOf, baseUrlOf, makeUpstreamHttp, requestHeaders } from "../../support/upstreamHttp.ts"
import { embeddingsBody, embeddingsOf } from "./embed.ts"
import { chatBody } from "./request.ts"
import { completionOf } from "./response.ts"
import { translator } from "./stream.ts"

const make = (provider: ProviderConfig, env: Readonly<Record<string, string | undefined>>) =>
  Effect.gen(function*() {
    const { basePath, origin } = yield* baseUrlOf(provider, "openai-compatible")
    const apiKey = yield* apiKeyOf(provider, env)
    const http = yield* makeUpstreamHttp(origin, provider.timeoutMs)
    const { json: jsonHeaders, sse: sseHeaders } = requestHeaders(apiKey ? { authorization: `Bearer ${apiKey}` } : {})
    const chatPath = `${basePath}/chat/completions`

    const complete: ProviderAdapter["complete"] = (call) =>
      Effect.scoped(Effect.gen(function*() {
        const response = yield* http.post(chatPath, chatBody(call, false), jsonHeaders)
        const text = yield* http.text(response)
        const now = yield* nowSeconds
        return yield* Effect.try({ try: () => completionOf(JSON.parse(text), call.upstreamModel, now), catch: protocolFailureOf })
      }))

    const stream: ProviderAdapter["stream"] = (call) =>
      Effect.gen(function*() {
        const response = yield* http.post(chatPath, chatBody(call, true), sseHeaders)
        const now = yield* nowSeconds
        return sseStream(response.body, translator(call.upstreamModel, now), { endMarker: true })
      })

    const embed: NonNullable<ProviderAdapter["embed"]> = (call) =>
      Effect.scoped(Effect.gen(function*() {
        const response = yield* http.post(`${basePath}/embeddings`, embeddingsBody(call), jsonHeaders)
        const text = yield* http.text(response)
        return yield* Effect.try({ try: () => embeddingsOf(JSON.parse(text), call.input.length), catch: protocolFailureOf })
      }))

    return { complete, stream, embed } satisfies ProviderAdapter
  })

export const plugin: ProviderPlugin = { id: "openai-compatible", options: NoOptions, make }

export const OpenAiCompatiblePlugin = registerPlugin(plugin)
