/**
 * Plugin for Google's Gemini API (`generateContent`, `streamGenerateContent`
 * with `alt=sse`, `batchEmbedContents`; default base URL
 * `https://generativelanguage.googleapis.com/v1beta`). Requests are translated
 * from our OpenAI-style shape (`messages.ts`, `schema.ts`, `request.ts`);
 * answers are rebuilt from known fields only (`response.ts`, `stream.ts`,
 * `embed.ts`).
 */
import { Effect } from "effect"
import type { ProviderConfig } from "../../../services/Config.ts"
import { type ProviderAdapter, type ProviderPlugin, registerPlugin } from "../../../services/Providers.ts"
import { NoOptions } from "../../../services/Registry.ts"
import { nowSeconds, protocolFailureOf } from "../../support/json.ts"
import { translated } from "../../support/translate.ts"
import { apiKeyOf, baseUrlOf, makeUpstreamHttp, requestHeaders } from "../../support/upstreamHttp.ts"
import { embeddingsBody, embeddingsOf } from "./embed.ts"
import { generateContentBody, modelPathOf } from "./request.ts"
import { completionOf } from "./response.ts"
import { chunksOf } from "./stream.ts"

const DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"

const make = (provider: ProviderConfig, env: Readonly<Record<string, string | undefined>>) =>
  Effect.gen(function*() {
    const { basePath, origin } = yield* baseUrlOf(provider, "gemini", DEFAULT_BASE_URL)
    const apiKey = yield* apiKeyOf(provider, env)
    const http = yield* makeUpstreamHttp(origin, provider.timeoutMs)
    // The key goes in a header, never in the URL (URLs end up in logs).
    const { json: jsonHeaders, sse: sseHeaders } = requestHeaders(apiKey ? { "x-goog-api-key": apiKey } : {})
    const pathFor = (upstreamModel: string, method: string) => `${basePath}/${modelPathOf(upstreamModel)}:${method}`

    const complete: ProviderAdapter["complete"] = (call) =>
      Effect.scoped(Effect.gen(function*() {
        const body = yield* translated(() => generateContentBody(call.request))
        const response = yield* http.post(pathFor(call.upstreamModel, "generateContent"), body, jsonHeaders)
        const text = yield* http.text(response)
        const now = yield* nowSeconds
        return yield* Effect.try({ try: () => completionOf(JSON.parse(text), call.upstreamModel, now), catch: protocolFailureOf })
      }))

    const stream: ProviderAdapter["stream"] = (call) =>
      Effect.gen(function*() {
        const body = yield* translated(() => generateContentBody(call.request))
        const response = yield* http.post(pathFor(call.upstreamModel, "streamGenerateContent?alt=sse"), body, sseHeaders)
        return chunksOf(response.body, call.upstreamModel, yield* nowSeconds)
      })

    const embed: NonNullable<ProviderAdapter["embed"]> = (call) =>
      Effect.scoped(Effect.gen(function*() {
        const response = yield* http.post(pathFor(call.upstreamModel, "batchEmbedContents"), embeddingsBody(call), jsonHeaders)
        const text = yield* http.text(response)
        return yield* Effect.try({ try: () => embeddingsOf(JSON.parse(text), call.input), catch: protocolFailureOf })
      }))

    return { complete, stream, embed } satisfies ProviderAdapter
  })

export const plugin: ProviderPlugin = { id: "gemini", options: NoOptions, make }

export const GeminiPlugin = registerPlugin(plugin)
