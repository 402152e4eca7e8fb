/** The catalogue. Model ids contain a slash: `/v1/models/svc/pro` and `/v1/models/svc%2Fpro` both work. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Wire } from "../../services/ApiError.ts"
import { ModelList, ModelRecord } from "./Records.ts"
import { documented } from "./operationDocs.ts"
import { AnyKey } from "./Security.ts"

export class ModelsGroup extends HttpApiGroup.make("models")
  .add(
    HttpApiEndpoint.get("listModels", "/v1/models")
      .addSuccess(ModelList)
      .annotateContext(documented("List models", "Every model some deployment serves now."))
  )
  .add(
    HttpApiEndpoint.get("getModel", "/v1/models/*")
      .setPath(Schema.Struct({ "*": Schema.String }))
      .addSuccess(ModelRecord)
      .addError(Wire.NotFound)
      .annotateContext(documented("Get a model", "One catalogue model; its id contains a slash (`svc/pro`), escaped or not."))
  )
  .annotate(OpenApi.Description, "The catalogue: models, their prices, capabilities and the privacy classes they can earn")
  .middleware(AnyKey)
{}
