/**
 * `GET /v1/logs`: an account's event log, newest first, a page at a time,
 * filtered by type (or category prefix), receipt and time range.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Wire } from "../../services/ApiError.ts"
import { EVENT_TYPES } from "../../services/EventLog.ts"
import { PageSize } from "./Lists.ts"
import { AccountSelector, EventCursor, EventTypeFilter, Rfc3339 } from "./monitoringParams.ts"
import { documented } from "./operationDocs.ts"
import { MonitoringScope } from "./Security.ts"

export const EventRecord = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("event"),
  type: Schema.Literal(...EVENT_TYPES),
  created_at: Schema.String,
  account_id: Schema.String,
  request_id: Schema.optional(Schema.String),
  receipt_id: Schema.optional(Schema.String),
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown })
}).annotations({ identifier: "Event", description: "One audit event; data never holds prompt or completion text" })

export const EventList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(EventRecord),
  next_cursor: Schema.NullOr(Schema.String).annotations({ description: "Pass as `cursor` for the next (older) page; null on the last" }),
  has_more: Schema.Boolean
}).annotations({ identifier: "EventList", description: "Events, newest first" })

export const LogsParams = Schema.Struct({
  accountId: Schema.optional(AccountSelector),
  type: Schema.optional(EventTypeFilter),
  receiptId: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,100}$/, { message: () => "must be a receipt id" }))),
  from: Schema.optional(Rfc3339),
  to: Schema.optional(Rfc3339),
  limit: Schema.optional(PageSize),
  cursor: Schema.optional(EventCursor)
})

export class LogsGroup extends HttpApiGroup.make("logs")
  .add(
    HttpApiEndpoint.get("listEvents", "/v1/logs")
      .setUrlParams(LogsParams)
      .addSuccess(EventList)
      .addError(Wire.Forbidden)
      .annotateContext(documented(
        "List events",
        "The account's audit events, newest first. A page lists an event once every older transaction has ended, " +
          "so walking the pages, or polling for what is newer, never misses one that commits late."
      ))
  )
  .annotate(OpenApi.Description, "The audit event log: account, key, payment, receipt, routing, privacy and agent events")
  .middleware(MonitoringScope)
{}
