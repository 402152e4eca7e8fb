/** Embeddings: shape translation only; the gateway does the work. */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { EmbeddingsGateway } from "../../services/EmbeddingsGateway.ts"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { billingHeaders } from "../http/billingHeaders.ts"

export const EmbeddingsHandlers = HttpApiBuilder.group(Api, "embeddings", (handlers) =>
  Effect.map(EmbeddingsGateway, (gateway) =>
    handlers.handle("createEmbeddings", ({ payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const { receipt, response } = yield* gateway.embed(payload, principal)
        // Built without a second Schema pass: the gateway already returns the wire shape.
        return HttpServerResponse.unsafeJson(response, { headers: billingHeaders(receipt) })
      }))))
