/**
 * Embeddings end to end: resolve the model, reserve the estimate (the input
 * tokens at the model's input price), call its deployment, settle the bill, and
 * hand back a response that names only the catalogue model.
 */
import { Context, type Effect } from "effect"
import type { AdmissionRefusal } from "./Admission.ts"
import type { InsufficientFunds, InvalidRequest, RefusedByModel, UpstreamError, UpstreamTimeout } from "./ApiError.ts"
import type { Principal } from "./ApiKeys.ts"
import type { EmbeddingsRequest, EmbeddingsResponse } from "./Embeddings.ts"
import type { Settlement } from "./Billing.ts"

/** What an embeddings call can fail with. */
export type EmbeddingsError =
  | AdmissionRefusal
  | InvalidRequest
  | InsufficientFunds | RefusedByModel | UpstreamError | UpstreamTimeout

export class EmbeddingsGateway extends Context.Tag("svc/EmbeddingsGateway")<EmbeddingsGateway, {
  readonly embed: (
    request: EmbeddingsRequest,
    principal: Principal
  ) => Effect.Effect<{ readonly response: EmbeddingsResponse; readonly receipt: Settlement }, EmbeddingsError>
}>() {}
