/** The catalogue endpoints. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { NotFound } from "../../services/ApiError.ts"
import { Catalogue, CATALOGUE_EPOCH, type Model } from "../../services/Catalogue.ts"
import { formatUsd, type Nanos } from "../../services/Money.ts"
import { Api } from "../api/Api.ts"
import type { ModelRecord } from "../api/Records.ts"
import { quote } from "../../services/quote.ts"

/** Prices per 1M tokens read best without trailing zeros: "0.035", not "0.035000000". */
const price = (nanos: Nanos) => formatUsd(nanos).replace(/\.?0+$/, "")

export const toModelRecord = (model: Model): typeof ModelRecord.Type => ({
  id: model.id,
  object: "model",
  created: model.created ?? CATALOGUE_EPOCH,
  owned_by: model.ownedBy ?? "svc",
  name: model.name,
  context_length: model.context,
  pricing: {
    input: price(model.pricing.input),
    ...(model.pricing.output === undefined ? {} : { output: price(model.pricing.output) })
  },
  modalities: model.modalities,
  capabilities: model.capabilities,
  supported_parameters: model.supportedParameters,
  privacy_classes: model.privacyClasses,
  tier: model.tier
})

/** `svc%2Fpro` arrives still encoded; a `%` the router already decoded (`1%25x` → `1%x`) is kept as it is. */
const decodedId = (raw: string) => {
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}

export const ModelsHandlers = HttpApiBuilder.group(Api, "models", (handlers) =>
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const list = { object: "list" as const, data: catalogue.list.map(toModelRecord) }
    return handlers
      .handle("listModels", () => Effect.succeed(list))
      .handle("getModel", ({ path }) => {
        const id = decodedId(path["*"])
        return Option.match(catalogue.get(id), {
          onNone: () => Effect.fail(new NotFound({ message: `No model ${quote(id)}.`, param: "id" })),
          onSome: (model) => Effect.succeed(toModelRecord(model))
        })
      })
  }))
