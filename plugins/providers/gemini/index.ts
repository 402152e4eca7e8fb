/**
 * Plugin for Google's Gemini API (`generateContent`, `streamGenerateContent`
 * with `alt=sse`, `batchEmbedContents`; default base URL
 * `https://generativelanguage.googleapis.com/v1beta`). Requests are translated
 * from our OpenAI-style shape (`messages.ts`, `schema.ts`, `request.ts`);
 * answers are rebuilt from known fields only (`response.ts`, `stream.ts`,
 * `embed.ts`).
 */
import { Effect, Schema } from "effect"
import type { ProviderConfig } from "../../../services/Config.ts"
import { type ProviderAdapter, type ProviderPlugin, registerPlugin } from "../../../services/Providers.ts"
import { nowSeconds, protocolFailureOf } from "../../support/json.ts"
import { translated } from "../../support/translate.ts"
import { apiKeyOf, baseUrlOf, makeUpstreamHttp, requestHeaders } from "../../support/upstreamHttp.ts"
import { embeddingsBody, embeddingsOf } from "./embed.ts"
import { credentialFailure } from "./credential.ts"
import { generateContentBody, modelPathOf } from "./request.ts"
import { completionOf } from "./response.ts"
import { chunksOf } from "./stream.ts"

const DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"

const SafetySetting = Schema.Struct({
  category: Schema.String.pipe(Schema.pattern(/^HARM_CATEGORY_[A-Z_]+$/, { message: () => "expected HARM_CATEGORY_…" })),
  threshold: Schema.Literal(
    "BLOCK_LOW_AND_ABOVE",
    "BLOCK_MEDIUM_AND_ABOVE",
    "BLOCK_ONLY_HIGH",
    "BLOCK_NONE",
    "OFF",
    "HARM_BLOCK_THRESHOLD_UNSPECIFIED"
  )
})

export const GeminiOptions = Schema.Struct({
  /** Sent as `safetySettings` with every generateContent call (Gemini's own defaults otherwise). */
  safetySettings: Schema.optional(Schema.Array(SafetySetting)),
  /** `taskType` of every embedding request: what the vectors are for. */
  embeddingTaskType: Schema.optional(Schema.Literal(
    "RETRIEVAL_QUERY",
    "RETRIEVAL_DOCUMENT",
    "SEMANTIC_SIMILARITY",
    "CLASSIFICATION",
    "CLUSTERING",
    "QUESTION_ANSWERING",
    "FACT_VERIFICATION",
    "CODE_RETRIEVAL_QUERY"
  ))
})
export type GeminiOptions = typeof GeminiOptions.Type

const make = (provider: ProviderConfig, options: GeminiOptions, env: Readonly<Record<string, string | undefined>>) =>
  Effect.gen(function*() {
    const { basePath, origin } = yield* baseUrlOf(provider, "gemini", DEFAULT_BASE_URL)
    const apiKey = yield* apiKeyOf(provider, env)
    const http = yield* makeUpstreamHttp(origin, provider.timeoutMs)
    // The key goes in a header, never in the URL (URLs end up in logs).
    const { json: jsonHeaders, sse: sseHeaders } = requestHeaders(apiKey ? { "x-goog-api-key": apiKey } : {})
    const pathFor = (upstreamModel: string, method: string) => `${basePath}/${modelPathOf(upstreamModel)}:${method}`
    const postStream = (path: string, body: unknown, endAt?: number) =>
      Effect.mapError(http.postStream(path, body, sseHeaders, endAt), credentialFailure)
    const postText = (path: string, body: unknown, endAt?: number) =>
      Effect.mapError(http.postText(path, body, jsonHeaders, endAt), credentialFailure)

    const complete: ProviderAdapter["complete"] = (call) =>
      Effect.gen(function*() {
        const body = yield* translated(() => generateContentBody(call.request, options.safetySettings))
        const text = yield* postText(pathFor(call.upstreamModel, "generateContent"), body, call.deadline?.endAt)
        const now = yield* nowSeconds
        return yield* Effect.try({ try: () => completionOf(JSON.parse(text), call.upstreamModel, now), catch: protocolFailureOf })
      })

    const stream: ProviderAdapter["stream"] = (call) =>
      Effect.gen(function*() {
        const body = yield* translated(() => generateContentBody(call.request, options.safetySettings))
        const answer = yield* postStream(pathFor(call.upstreamModel, "streamGenerateContent?alt=sse"), body, call.deadline?.endAt)
        return chunksOf(answer, call.upstreamModel, yield* nowSeconds, call.deadline)
      })

    const embed: NonNullable<ProviderAdapter["embed"]> = (call) =>
      Effect.gen(function*() {
        const text = yield* postText(pathFor(call.upstreamModel, "batchEmbedContents"), embeddingsBody(call, options.embeddingTaskType))
        return yield* Effect.try({ try: () => embeddingsOf(JSON.parse(text), call.input), catch: protocolFailureOf })
      })

    return { complete, keepsDeadline: true, stream, embed } satisfies ProviderAdapter
  })

export const plugin: ProviderPlugin<GeminiOptions> = { id: "gemini", options: GeminiOptions, make }

export const GeminiPlugin = registerPlugin(plugin)
