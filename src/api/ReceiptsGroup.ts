/**
 * `GET /v1/receipts/{id}`: the per-call billing record, for the owning account only; and
 * `GET /v1/receipts/{id}/transcript`: the call's kept text, when the operator keeps standard-class text.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Wire } from "../../services/ApiError.ts"
import { documented } from "./operationDocs.ts"
import { ReceiptRecord, TranscriptRecord } from "./Records.ts"
import { AccountSelector } from "./monitoringParams.ts"
import { MonitoringScope } from "./Security.ts"

export class ReceiptsGroup extends HttpApiGroup.make("receipts")
  .add(
    HttpApiEndpoint.get("getReceipt", "/v1/receipts/:id")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setUrlParams(Schema.Struct({ accountId: Schema.optional(AccountSelector) }))
      .addSuccess(ReceiptRecord)
      .addError(Wire.Forbidden)
      .addError(Wire.NotFound)
      .annotateContext(documented(
        "Get a receipt",
        "The billing record of one call of the key's account; an admin key reads any account's."
      ))
  )
  .add(
    HttpApiEndpoint.get("getTranscript", "/v1/receipts/:id/transcript")
      .setPath(Schema.Struct({ id: Schema.String }))
      .addSuccess(TranscriptRecord)
      .addError(Wire.NotFound)
      .annotateContext(documented(
        "Get a call's kept text",
        "The prompt and completion of a standard-class call, kept only while the operator turns prompt storage on."
      ))
  )
  .annotate(OpenApi.Description, "Per-call billing records, the canonical account of what a call cost")
  .middleware(MonitoringScope)
{}
