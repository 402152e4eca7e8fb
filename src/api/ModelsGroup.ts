/** The catalogue. Model ids contain a slash: `/v1/models/svc/pro` and `/v1/models/svc%2Fpro` both work. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Wire } from "../../services/ApiError.ts"
import { ModelList, ModelRecord } from "./Records.ts"
import { AnyKey } from "./Security.ts"

export class ModelsGroup extends HttpApiGroup.make("models")
  .add(HttpApiEndpoint.get("listModels", "/v1/models").addSuccess(ModelList))
  .add(
    HttpApiEndpoint.get("getModel", "/v1/models/*")
      .setPath(Schema.Struct({ "*": Schema.String }))
      .addSuccess(ModelRecord)
      .addError(Wire.NotFound)
  )
  .middleware(AnyKey)
{}
