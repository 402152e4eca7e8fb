/** Embeddings: shape translation only; the gateway and idempotency services do the work. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { EmbeddingsGateway } from "../../services/EmbeddingsGateway.ts"
import { Idempotency } from "../../services/Idempotency.ts"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { billingHeaders } from "../http/billingHeaders.ts"
import { idempotencyKeyOf, jsonOnce } from "../http/idempotent.ts"

export const EmbeddingsHandlers = HttpApiBuilder.group(Api, "embeddings", (handlers) =>
  Effect.gen(function*() {
    const gateway = yield* EmbeddingsGateway
    const idempotency = yield* Idempotency
    return handlers.handle("createEmbeddings", ({ headers, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const key = idempotencyKeyOf(principal, headers["idempotency-key"], "/v1/embeddings", payload)
        const embed = Effect.map(gateway.embed(payload, principal), ({ receipt, response }) => ({
          status: 200,
          headers: billingHeaders(receipt),
          body: response as unknown
        }))
        return yield* jsonOnce(idempotency, key, embed)
      }))
  }))
