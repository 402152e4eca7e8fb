/**
 * `GET /v1/receipts/{id}`: the per-call billing record, for the owning account only; and
 * `GET /v1/receipts/{id}/transcript`: the call's kept text, when the operator keeps standard-class text.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Wire } from "../../services/ApiError.ts"
import { ReceiptRecord, TranscriptRecord } from "./Records.ts"
import { MonitoringScope } from "./Security.ts"

export class ReceiptsGroup extends HttpApiGroup.make("receipts")
  .add(
    HttpApiEndpoint.get("getReceipt", "/v1/receipts/:id")
      .setPath(Schema.Struct({ id: Schema.String }))
      .addSuccess(ReceiptRecord)
      .addError(Wire.NotFound)
  )
  .add(
    HttpApiEndpoint.get("getTranscript", "/v1/receipts/:id/transcript")
      .setPath(Schema.Struct({ id: Schema.String }))
      .addSuccess(TranscriptRecord)
      .addError(Wire.NotFound)
  )
  .middleware(MonitoringScope)
{}
