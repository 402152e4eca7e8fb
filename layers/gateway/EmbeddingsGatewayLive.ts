/**
 * The embeddings path, billed like chat: reserve the input tokens at the
 * model's input price, call the model's first deployment, settle at the usage
 * it reports (input only) or release on failure, and answer with the catalogue
 * model id, so nothing the caller sees names the upstream.
 */
import { Effect, Layer } from "effect"
import { InvalidRequest } from "../../services/ApiError.ts"
import { Catalogue } from "../../services/Catalogue.ts"
import { type EmbeddingsResponse, inputsOf, toBase64 } from "../../services/Embeddings.ts"
import { EmbeddingsGateway } from "../../services/EmbeddingsGateway.ts"
import { Ids } from "../../services/Ids.ts"
import { Ledger } from "../../services/Ledger.ts"
import { Pricing } from "../../services/Pricing.ts"
import { billOf, modelFor, withReservation } from "../billing/billedCall.ts"
import { toApiError } from "./upstreamErrors.ts"

export const EmbeddingsGatewayLive = Layer.effect(
  EmbeddingsGateway,
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const ids = yield* Ids
    const ledger = yield* Ledger
    const pricing = yield* Pricing

    return {
      embed: (request, principal) =>
        Effect.gen(function*() {
          const model = yield* modelFor(catalogue, request.model, "embeddings", "embeddings")
          const inputs = inputsOf(request)
          const counts = inputs.map(pricing.countText)
          const tooLong = counts.findIndex((tokens) => tokens > model.context)
          if (tooLong >= 0) {
            return yield* new InvalidRequest({
              message: `Input ${tooLong} has ${counts[tooLong]} tokens; ${model.id} takes at most ${model.context}.`,
              param: "input"
            })
          }
          const deployment = catalogue.deployments(model.id)[0]
          const embed = deployment?.adapter.embed
          if (deployment === undefined || embed === undefined) {
            return yield* new InvalidRequest({ message: `${model.id} cannot serve embeddings now.`, param: "model" })
          }
          const estimate = { inputTokens: counts.reduce((sum, n) => sum + n, 0), outputTokens: 0 }
          const started = performance.now()
          // A failed or abandoned call is not billed.
          return yield* withReservation(ledger, ids, principal, pricing.amount(model.pricing, estimate), (reservation) =>
            embed({
            input: inputs,
            dimensions: request.dimensions,
            user: request.user,
            upstreamModel: deployment.upstreamModel
          }).pipe(
            Effect.catchAll(toApiError(deployment)),
            Effect.flatMap((result) => {
              const usage = { inputTokens: result.promptTokens, outputTokens: 0 }
              const settled = ledger.settle(
                reservation,
                billOf(pricing, "/v1/embeddings", model, deployment, usage, [{
                  model: model.id,
                  outcome: "ok",
                  latencyMs: Math.round(performance.now() - started),
                  deployment: deployment.id
                }])
              )
              return Effect.map(settled, (receipt) => {
                const base64 = request.encoding_format === "base64"
                const response: EmbeddingsResponse = {
                  object: "list",
                  data: result.embeddings.map((vector, index) => ({
                    object: "embedding",
                    index,
                    embedding: base64 ? toBase64(vector) : vector
                  })),
                  model: model.id,
                  usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens }
                }
                return { response, receipt }
              }).pipe(Effect.uninterruptible)
            }),
          ))
        })
    }
  })
)
