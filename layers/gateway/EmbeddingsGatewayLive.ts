/**
 * The embeddings path, billed like chat: admission counts the inputs; hold
 * them at the model's input price, call the model's first deployment, settle
 * at the usage it reports (input only) or release on failure, and answer with
 * the catalogue model id, so nothing the caller sees names the upstream.
 * Embeddings take no privacy envelope: they are served, and receipted, at the
 * standard class.
 */
import { Effect, Layer, Option } from "effect"
import { Admission } from "../../services/Admission.ts"
import { InvalidRequest } from "../../services/ApiError.ts"
import { Billing } from "../../services/Billing.ts"
import { Catalogue } from "../../services/Catalogue.ts"
import { type EmbeddingsResponse, toBase64 } from "../../services/Embeddings.ts"
import { EmbeddingsGateway } from "../../services/EmbeddingsGateway.ts"
import { Pricing } from "../../services/Pricing.ts"
import { toApiError } from "../upstream/upstreamErrors.ts"
import { quote } from "../../services/quote.ts"

const unknownModel = (id: string) =>
  new InvalidRequest({ message: `Unknown model "${quote(id)}"; GET /v1/models lists the models you can use.`, param: "model" })

export const EmbeddingsGatewayLive = Layer.effect(
  EmbeddingsGateway,
  Effect.gen(function*() {
    const admission = yield* Admission
    const catalogue = yield* Catalogue
    const billing = yield* Billing
    const pricing = yield* Pricing

    return EmbeddingsGateway.of({
      embed: (sent, principal) =>
        Effect.gen(function*() {
          const { inputTokens: counts, inputs, request } = yield* admission.embeddings(sent, principal)
          const model = yield* Option.match(catalogue.get(request.model), {
            onNone: () => Effect.fail(unknownModel(request.model)),
            onSome: Effect.succeed
          })
          if (!model.capabilities.includes("embeddings")) {
            return yield* new InvalidRequest({ message: `${model.id} does not serve embeddings.`, param: "model" })
          }
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
          return yield* billing.withHold(principal, pricing.amount(model.pricing, estimate), (hold) => Effect.gen(function*() {
            const started = performance.now()
            const result = yield* embed({
              input: inputs,
              dimensions: request.dimensions,
              user: request.user,
              upstreamModel: deployment.upstreamModel
            }).pipe(Effect.catchAll(toApiError(deployment)))
            const receipt = yield* billing.settle(hold, {
              endpoint: "/v1/embeddings",
              model,
              deployment,
              usage: { inputTokens: result.promptTokens, outputTokens: 0 },
              attempts: [{
                model: model.id,
                outcome: "ok",
                latencyMs: Math.round(performance.now() - started),
                deployment: deployment.id
              }],
              privacyClass: "standard_route"
            }).pipe(Effect.uninterruptible)
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
          }))
        })
    })
  })
)
