/** Chat completions: shape translation only; the gateway service does the work. */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { ChatGateway } from "../../services/ChatGateway.ts"
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

export const ChatHandlers = HttpApiBuilder.group(Api, "chat", (handlers) =>
  Effect.gen(function*() {
    const gateway = yield* ChatGateway
    return handlers.handle("createChatCompletion", ({ payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        if (payload.stream === true) {
          // The amounts are known only when the stream ends; the receipt id is known now.
          const { chunks, receiptId } = yield* gateway.stream(payload, principal)
          return HttpServerResponse.setHeader(sseResponse(chunks), "x-svc-receipt-id", receiptId)
        }
        const { completion, receipt } = yield* gateway.complete(payload, principal)
        // Built without a second Schema pass: the gateway already returns the wire shape.
        return HttpServerResponse.unsafeJson(completion, { headers: billingHeaders(receipt) })
      }))
  }))
