/**
 * Presets checked against the catalogue and the router modes in force:
 * `model` is a chat model or a mode, every fallback in `models` a chat model,
 * the privacy class one of the spec's, and the embedding model one that
 * serves embeddings. Whether a class can be earned now is the run's question
 * (deployments and attestations change), answered by the privacy policy then.
 */
import { Effect, Layer, Option, Schema } from "effect"
import { AgentPresets } from "../../services/AgentPresets.ts"
import { InvalidRequest } from "../../services/ApiError.ts"
import { Catalogue } from "../../services/Catalogue.ts"
import { PrivacyClass } from "../../services/Config.ts"
import { quote } from "../../services/quote.ts"
import { RouterStrategies } from "../../services/Router.ts"

const refuse = (param: string, message: string) => Effect.fail(new InvalidRequest({ message, param }))

export const AgentPresetsLive = Layer.effect(
  AgentPresets,
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const modes = yield* RouterStrategies
    const chatModel = (id: string) =>
      Option.exists(catalogue.get(id), (model) => model.capabilities.includes("chat"))

    return AgentPresets.of({
      check: (routing, embeddingModel) =>
        Effect.gen(function*() {
          if (!chatModel(routing.model) && Option.isNone(modes.get(routing.model))) {
            return yield* refuse(
              "routing.model",
              `Unknown model or router mode "${quote(routing.model)}"; GET /v1/models lists the models, and "auto" picks one.`
            )
          }
          for (const [index, id] of (routing.models ?? []).entries()) {
            if (!chatModel(id)) return yield* refuse(`routing.models[${index}]`, `Unknown chat model "${quote(id)}".`)
          }
          const privacyClass = routing.privacy?.class
          if (privacyClass !== undefined && !Schema.is(PrivacyClass)(privacyClass)) {
            return yield* refuse("routing.privacy.class", `Unknown privacy class "${quote(privacyClass)}".`)
          }
          if (!Option.exists(catalogue.get(embeddingModel), (model) => model.capabilities.includes("embeddings"))) {
            return yield* refuse("embedding_model", `"${quote(embeddingModel)}" is not an embeddings model of the catalogue.`)
          }
        })
    })
  })
)
