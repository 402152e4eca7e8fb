/**
 * Plugin for Anthropic's Messages API (`POST {baseUrl}/messages`, default
 * `https://api.anthropic.com/v1`). Requests arrive in our OpenAI-style shape
 * and are rewritten into Anthropic's (`messages.ts`, `request.ts`); answers
 * are rebuilt from known fields only (`response.ts`, `stream.ts`).
 */
import { Effect } from "effect"
import type { ProviderConfig } from "../../../services/Config.ts"
import { type ProviderAdapter, type ProviderPlugin, registerPlugin } from "../../../services/Providers.ts"
import { NoOptions } from "../../../services/Registry.ts"
import { nowSeconds, protocolFailureOf } from "../../support/json.ts"
import { sseStream } from "../../support/sse.ts"
import { translated } from "../../support/translate.ts"
import { apiKeyOf, baseUrlOf, makeUpstreamHttp, requestHeaders } from "../../support/upstreamHttp.ts"
import { planOf } from "./request.ts"
import { completionOf } from "./response.ts"
import { translator } from "./stream.ts"

const DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
const API_VERSION = "2023-06-01"

const make = (provider: ProviderConfig, env: Readonly<Record<string, string | undefined>>) =>
  Effect.gen(function*() {
    const { basePath, origin } = yield* baseUrlOf(provider, "anthropic", DEFAULT_BASE_URL)
    const apiKey = yield* apiKeyOf(provider, env)
    const http = yield* makeUpstreamHttp(origin, provider.timeoutMs)
    const { json: jsonHeaders, sse: sseHeaders } = requestHeaders({
      "anthropic-version": API_VERSION,
      ...(apiKey ? { "x-api-key": apiKey } : {})
    })
    const messagesPath = `${basePath}/messages`

    const complete: ProviderAdapter["complete"] = (call) =>
      Effect.scoped(Effect.gen(function*() {
        const plan = yield* translated(() => planOf(call, false))
        const response = yield* http.post(messagesPath, plan.body, jsonHeaders)
        const text = yield* http.text(response)
        const now = yield* nowSeconds
        return yield* Effect.try({
          try: () => completionOf(JSON.parse(text), call.upstreamModel, plan.answerTool, now),
          catch: protocolFailureOf
        })
      }))

    const stream: ProviderAdapter["stream"] = (call) =>
      Effect.gen(function*() {
        const plan = yield* translated(() => planOf(call, true))
        const response = yield* http.post(messagesPath, plan.body, sseHeaders)
        const now = yield* nowSeconds
        return sseStream(response.body, translator(call.upstreamModel, plan.answerTool, now), { endMarker: true })
      })

    return { complete, stream } satisfies ProviderAdapter
  })

export const plugin: ProviderPlugin = { id: "anthropic", options: NoOptions, make }

export const AnthropicPlugin = registerPlugin(plugin)
