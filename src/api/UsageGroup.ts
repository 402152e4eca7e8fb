/**
 * `GET /v1/usage`: what the account's calls used and cost in a time range —
 * totals (and by privacy class), optional groups by model, key or day, and
 * the calls a page at a time, newest first.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Wire } from "../../services/ApiError.ts"
import { PrivacyClass } from "../../services/Config.ts"
import { USAGE_GROUPINGS } from "../../services/Usage.ts"
import { PageSize, positionCursor } from "./Lists.ts"
import { AccountSelector, Rfc3339 } from "./monitoringParams.ts"
import { documented } from "./operationDocs.ts"
import { MonitoringScope } from "./Security.ts"

const Figures = {
  requests: Schema.Int,
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  spend_usd: Schema.String
}

const UsageCallRecord = Schema.Struct({
  receipt_id: Schema.String,
  request_id: Schema.String,
  key_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  endpoint: Schema.String,
  model: Schema.String,
  privacy_class: PrivacyClass,
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  cost_usd: Schema.String
}).annotations({ identifier: "UsageCall", description: "One billed call, from its receipt" })

export const UsageRecord = Schema.Struct({
  object: Schema.Literal("usage"),
  from: Schema.NullOr(Schema.String),
  to: Schema.NullOr(Schema.String),
  totals: Schema.NullOr(Schema.Struct({
    ...Figures,
    by_privacy_class: Schema.Array(Schema.Struct({ privacy_class: PrivacyClass, ...Figures }))
  })).annotations({ description: "For the whole range; on the first page only (null on the pages a cursor asks for)" }),
  groups: Schema.NullOr(Schema.Array(Schema.Struct({ group: Schema.String, ...Figures }))).annotations({
    description: "With group_by, on the first page: biggest spend first"
  }),
  data: Schema.Array(UsageCallRecord),
  next_cursor: Schema.NullOr(Schema.String).annotations({ description: "Pass as `cursor` for the next (older) calls; null on the last" }),
  has_more: Schema.Boolean
}).annotations({ identifier: "Usage", description: "Spend, tokens and requests of the billed calls in a range" })

const USAGE_CURSOR = /^(\d{1,20})\.([A-Za-z0-9_-]{1,100})$/

/** `cursor` of the usage calls: the settling transaction and receipt id of the last call shown. */
export const UsageCursor = positionCursor(Schema.Struct({ xid: Schema.BigIntFromSelf, id: Schema.String }), {
  read: (text) => {
    const match = USAGE_CURSOR.exec(text)
    return match === null ? undefined : { xid: BigInt(match[1]!), id: match[2]! }
  },
  write: (position) => `${position.xid}.${position.id}`
})

export const usageCursorOf = Schema.encodeSync(UsageCursor)

export const UsageParams = Schema.Struct({
  accountId: Schema.optional(AccountSelector),
  from: Schema.optional(Rfc3339),
  to: Schema.optional(Rfc3339),
  group_by: Schema.optional(Schema.Literal(...USAGE_GROUPINGS).annotations({
    message: () => `must be one of ${USAGE_GROUPINGS.join(", ")}`
  })),
  limit: Schema.optional(PageSize),
  cursor: Schema.optional(UsageCursor)
})

export class UsageGroup extends HttpApiGroup.make("usage")
  .add(
    HttpApiEndpoint.get("getUsage", "/v1/usage")
      .setUrlParams(UsageParams)
      .addSuccess(UsageRecord)
      .addError(Wire.Forbidden)
      .annotateContext(documented(
        "Get usage",
        "Totals of the billed calls in a range (from inclusive, to exclusive), optionally grouped by model, key or day, " +
          "and the calls themselves, newest first, a page at a time."
      ))
  )
  .annotate(OpenApi.Description, "Spend, tokens and request totals, from the receipts")
  .middleware(MonitoringScope)
{}
