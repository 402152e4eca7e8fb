/** What the chat and embeddings paths share about the model they serve. */
import { Effect, Option } from "effect"
import { InvalidRequest } from "../services/ApiError.ts"
import type { Catalogue, Model } from "../services/Catalogue.ts"
import type { Capability, PrivacyClass } from "../services/Config.ts"

/** Until privacy classes are enforced, every call is served at the weakest class. */
export const SERVED_CLASS: PrivacyClass = "standard_route"

/** The listed model a request names, if it has the capability the endpoint needs. */
export const modelFor = (
  catalogue: Catalogue["Type"],
  id: string,
  capability: Capability,
  endpoint: string
): Effect.Effect<Model, InvalidRequest> =>
  Option.match(catalogue.get(id), {
    onNone: () =>
      Effect.fail(
        new InvalidRequest({
          message: `Unknown model "${id}"; GET /v1/models lists the models you can use.`,
          param: "model"
        })
      ),
    onSome: (model) =>
      model.capabilities.includes(capability)
        ? Effect.succeed(model)
        : Effect.fail(new InvalidRequest({ message: `${model.id} does not serve ${endpoint}.`, param: "model" }))
  })
