/** Chat completions: shape translation only; the gateway service does the work. */
import { createHash } from "node:crypto"
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Conflict } from "../../services/ApiError.ts"
import type { ChatRequest } from "../../services/Chat.ts"
import { ChatGateway } from "../../services/ChatGateway.ts"
import { Idempotency } from "../../services/Idempotency.ts"
import type { Receipt } from "../../services/Ledger.ts"
import { formatUsd } from "../../services/Money.ts"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { sseResponse } from "../http/Sse.ts"

/** The spec's billing headers (4.4). */
const billingHeaders = (receipt: Receipt) => ({
  "x-svc-upstream-cost-usd": formatUsd(receipt.cost.upstream),
  "x-svc-margin-usd": formatUsd(receipt.cost.margin),
  "x-svc-total-usd": formatUsd(receipt.cost.total),
  "x-svc-receipt-id": receipt.id
})

const sha256 = (request: ChatRequest) => createHash("sha256").update(JSON.stringify(request)).digest()

export const ChatHandlers = HttpApiBuilder.group(Api, "chat", (handlers) =>
  Effect.gen(function*() {
    const gateway = yield* ChatGateway
    const idempotency = yield* Idempotency
    return handlers.handle("createChatCompletion", ({ headers, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const key = headers["idempotency-key"]

        if (payload.stream === true) {
          const start = Effect.map(gateway.stream(payload, principal), ({ chunks, receiptId }) => ({
            chunks,
            stored: { status: 200, headers: { "x-svc-receipt-id": receiptId }, body: null }
          }))
          if (key === undefined) {
            const { chunks, stored } = yield* start
            return HttpServerResponse.setHeaders(sseResponse(chunks), stored.headers)
          }
          // A stream cannot be replayed: a retry learns the first call's receipt from a 409 instead.
          let chunks: Parameters<typeof sseResponse>[0] | undefined
          const { response } = yield* idempotency.once(
            { accountId: principal.accountId!, key, requestSha256: sha256(payload) },
            Effect.map(start, (started) => {
              chunks = started.chunks
              return started.stored
            })
          )
          if (chunks === undefined) {
            return yield* new Conflict({
              message: `This streamed request already ran (receipt ${
                response.headers["x-svc-receipt-id"]
              }); streams are not replayed.`,
              param: "Idempotency-Key"
            })
          }
          return HttpServerResponse.setHeaders(sseResponse(chunks), response.headers)
        }

        const complete = Effect.map(gateway.complete(payload, principal), ({ completion, receipt }) => ({
          status: 200,
          headers: billingHeaders(receipt),
          body: completion as unknown
        }))
        if (key === undefined) {
          const { body, headers: billing } = yield* complete
          // Built without a second Schema pass: the gateway already returns the wire shape.
          return HttpServerResponse.unsafeJson(body, { headers: billing })
        }
        const { replayed, response } = yield* idempotency.once(
          { accountId: principal.accountId!, key, requestSha256: sha256(payload) },
          complete
        )
        return HttpServerResponse.unsafeJson(response.body, {
          status: response.status,
          headers: replayed ? { ...response.headers, "idempotent-replayed": "true" } : response.headers
        })
      }))
  }))
