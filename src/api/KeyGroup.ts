/**
 * `GET /v1/key`: what the calling key is — its id, account (none for an
 * operator key), scopes and limits — for any valid key. A dashboard learns
 * from it what to show without probing endpoints it may not use.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Scope } from "../../services/ApiKeys.ts"
import { documented } from "./operationDocs.ts"
import { AnyKey } from "./Security.ts"

export const CallerKey = Schema.Struct({
  object: Schema.Literal("key"),
  id: Schema.String,
  account_id: Schema.NullOr(Schema.String).annotations({ description: "null for an operator key" }),
  scopes: Schema.Array(Scope),
  rpm: Schema.NullOr(Schema.Int).annotations({ description: "The key's own requests per minute; null: the config's default" }),
  tpm: Schema.NullOr(Schema.Int).annotations({ description: "The key's own tokens per minute; null: the config's default" })
}).annotations({ identifier: "CallerKey", description: "The key that made the request" })

export class KeyGroup extends HttpApiGroup.make("key")
  .add(
    HttpApiEndpoint.get("getKey", "/v1/key")
      .addSuccess(CallerKey)
      .annotateContext(documented("Get the calling key", "The key's id, account, scopes and limits."))
  )
  .annotate(OpenApi.Description, "The calling key")
  .middleware(AnyKey)
{}
