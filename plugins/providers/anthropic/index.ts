/**
 * Plugin for Anthropic's Messages API (`POST {baseUrl}/messages`, default
 * `https://api.anthropic.com/v1`). Requests arrive in our OpenAI-style shape
 * and are rewritten into Anthropic's (`messages.ts`, `request.ts`); answers
 * are rebuilt from known fields only (`response.ts`, `stream.ts`).
 */
import { Effect, Schema } from "effect"
import type { ProviderConfig } from "../../../services/Config.ts"
import { type ProviderAdapter, type ProviderPlugin, registerPlugin } from "../../../services/Providers.ts"
import { nowSeconds, protocolFailureOf } from "../../support/json.ts"
import { sseStream } from "../../support/sse.ts"
import { translated } from "../../support/translate.ts"
import { apiKeyOf, baseUrlOf, makeUpstreamHttp, requestHeaders } from "../../support/upstreamHttp.ts"
import { planOf } from "./request.ts"
import { completionOf } from "./response.ts"
import { translator } from "./stream.ts"

const DEFAULT_BASE_URL = "https://api.anthropic.com/v1"

export const AnthropicOptions = Schema.Struct({
  /** The `anthropic-version` header: the API version the translation is written for, unless told otherwise. */
  version: Schema.optionalWith(
    Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/, { message: () => "expected a date such as 2023-06-01" })),
    { default: () => "2023-06-01" }
  ),
  /** `max_tokens` sent when the caller sets no limit (Anthropic requires one). */
  defaultMaxTokens: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 4096 }),
  /** Beta features to turn on, sent as `anthropic-beta`. */
  betas: Schema.optionalWith(Schema.Array(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.-]+$/))), { default: () => [] })
})
export type AnthropicOptions = typeof AnthropicOptions.Type

const make = (provider: ProviderConfig, options: AnthropicOptions, env: Readonly<Record<string, string | undefined>>) =>
  Effect.gen(function*() {
    const { basePath, origin } = yield* baseUrlOf(provider, "anthropic", DEFAULT_BASE_URL)
    const apiKey = yield* apiKeyOf(provider, env)
    const http = yield* makeUpstreamHttp(origin, provider.timeoutMs)
    const { json: jsonHeaders, sse: sseHeaders } = requestHeaders({
      "anthropic-version": options.version,
      ...(options.betas.length > 0 ? { "anthropic-beta": options.betas.join(",") } : {}),
      ...(apiKey ? { "x-api-key": apiKey } : {})
    })
    const messagesPath = `${basePath}/messages`

    const complete: ProviderAdapter["complete"] = (call) =>
      Effect.gen(function*() {
        const plan = yield* translated(() => planOf(call, false, options.defaultMaxTokens))
        const text = yield* http.postText(messagesPath, plan.body, jsonHeaders, call.deadline?.endAt)
        const now = yield* nowSeconds
        return yield* Effect.try({
          try: () => completionOf(JSON.parse(text), call.upstreamModel, plan.answerTool, now),
          catch: protocolFailureOf
        })
      })

    const stream: ProviderAdapter["stream"] = (call) =>
      Effect.gen(function*() {
        const plan = yield* translated(() => planOf(call, true, options.defaultMaxTokens))
        const body = yield* http.postStream(messagesPath, plan.body, sseHeaders, call.deadline?.endAt)
        const now = yield* nowSeconds
        return sseStream(body, translator(call.upstreamModel, plan.answerTool, now), { endMarker: true, deadline: call.deadline })
      })

    return { complete, keepsDeadline: true, stream } satisfies ProviderAdapter
  })

export const plugin: ProviderPlugin<AnthropicOptions> = { id: "anthropic", options: AnthropicOptions, make }

export const AnthropicPlugin = registerPlugin(plugin)
