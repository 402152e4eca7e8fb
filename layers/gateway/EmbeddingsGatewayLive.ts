/**
 * The embeddings path, billed like chat: admission counts the inputs; hold
 * them at the model's input price, call the model's first deployment, settle
 * at the usage it reports (input only) or release on failure, and answer with
 * the catalogue model id, so nothing the caller sees names the upstream.
 * Embeddings take no privacy envelope: they are served, and receipted, at the
 * standard class.
 *
 * OpenAI's bounds (400 `invalid_request` naming the parameter): at most 2,048
 * inputs (the request schema), each within the model's context, all together
 * within `MAX_EMBEDDING_REQUEST_TOKENS`, and `dimensions` within the model's
 * own (catalogue `dimensions`). Billed for the tokens the upstream reported,
 * else for our count; the call has the chat path's deadlines.
 */
import { Effect, Layer } from "effect"
import { Admission } from "../../services/Admission.ts"
import { InvalidRequest } from "../../services/ApiError.ts"
import { Billing } from "../../services/Billing.ts"
import { Catalogue } from "../../services/Catalogue.ts"
import { AppConfig } from "../../services/Config.ts"
import { type EmbeddingsResponse, MAX_EMBEDDING_REQUEST_TOKENS, toBase64 } from "../../services/Embeddings.ts"
import { EmbeddingsGateway } from "../../services/EmbeddingsGateway.ts"
import { Pricing } from "../../services/Pricing.ts"
import { callEmbedding, embeddingTarget } from "./embeddingCall.ts"

export const EmbeddingsGatewayLive = Layer.effect(
  EmbeddingsGateway,
  Effect.gen(function*() {
    const admission = yield* Admission
    const catalogue = yield* Catalogue
    const billing = yield* Billing
    const pricing = yield* Pricing
    const deadlines = (yield* AppConfig).file.routing.deadline

    return EmbeddingsGateway.of({
      embed: (sent, principal) =>
        Effect.gen(function*() {
          const { inputTokens: counts, inputs, rateLimit, request } = yield* admission.embeddings(sent, principal)
          const target = yield* embeddingTarget(catalogue, request.model)
          const { deployment, model } = target
          if (request.dimensions !== undefined && model.dimensions !== undefined && request.dimensions > model.dimensions) {
            return yield* new InvalidRequest({
              message: `${model.id} makes vectors of at most ${model.dimensions} dimensions.`,
              param: "dimensions"
            })
          }
          const tooLong = counts.findIndex((tokens) => tokens > model.context)
          if (tooLong >= 0) {
            return yield* new InvalidRequest({
              message: `Input ${tooLong} has ${counts[tooLong]} tokens; ${model.id} takes at most ${model.context}.`,
              param: "input"
            })
          }
          const inputTokens = counts.reduce((sum, n) => sum + n, 0)
          if (inputTokens > MAX_EMBEDDING_REQUEST_TOKENS) {
            return yield* new InvalidRequest({
              message: `The inputs have ${inputTokens} tokens together; one request takes at most ${MAX_EMBEDDING_REQUEST_TOKENS}.`,
              param: "input"
            })
          }
          const estimate = { inputTokens, outputTokens: 0 }
          return yield* billing.withHold(principal, pricing.amount(model.pricing, estimate), (hold) => Effect.gen(function*() {
            const { latencyMs, result } = yield* callEmbedding(
              target,
              { input: inputs, dimensions: request.dimensions, user: request.user },
              deadlines
            )
            // What the upstream counted, when it said; else ours.
            const promptTokens = result.promptTokens ?? inputTokens
            const receipt = yield* billing.settle(hold, {
              endpoint: "/v1/embeddings",
              model,
              deployment,
              usage: { inputTokens: promptTokens, outputTokens: 0 },
              estimated: estimate,
              attempts: [{
                model: model.id,
                outcome: "ok",
                latencyMs,
                deployment: deployment.id
              }],
              privacyClass: "standard_route"
            }).pipe(Effect.uninterruptible)
            if (rateLimit !== undefined) yield* rateLimit.settle(receipt.usage.inputTokens)
            const base64 = request.encoding_format === "base64"
            const response: EmbeddingsResponse = {
              object: "list",
              data: result.embeddings.map((vector, index) => ({
                object: "embedding",
                index,
                embedding: base64 ? toBase64(vector) : vector
              })),
              model: model.id,
              // As billed: an upstream figure that cannot be right is not echoed.
              usage: { prompt_tokens: receipt.usage.inputTokens, total_tokens: receipt.usage.inputTokens }
            }
            return { response, receipt }
          }))
        }).pipe(Effect.scoped)
    })
  })
)
