/**
 * `POST /v1/embeddings` (OpenAI wire format), for models with the
 * `embeddings` capability; billed like chat, with the same billing headers.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Wire } from "../../services/ApiError.ts"
import { EmbeddingsRequest, EmbeddingsResponse } from "../../services/Embeddings.ts"
import { IdempotencyHeaders } from "./IdempotencyHeader.ts"
import { documented } from "./operationDocs.ts"
import { ChatScope } from "./Security.ts"

export class EmbeddingsGroup extends HttpApiGroup.make("embeddings")
  .add(
    HttpApiEndpoint.post("createEmbeddings", "/v1/embeddings")
      .setPayload(EmbeddingsRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(EmbeddingsResponse)
      .addError(Wire.InsufficientFunds)
      .addError(Wire.Conflict)
      .addError(Wire.RateLimited)
      .addError(Wire.UpstreamError)
      .addError(Wire.ServiceUnavailable)
      .addError(Wire.UpstreamTimeout)
      .annotateContext(documented("Create embeddings", "OpenAI-compatible embeddings, billed like chat completions."))
  )
  .annotate(OpenApi.Description, "OpenAI-compatible embeddings")
  .middleware(ChatScope)
{}
