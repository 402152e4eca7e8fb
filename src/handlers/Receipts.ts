/** Receipts: a key reads its own account's receipts; anything else is not found. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { NotFound } from "../../services/ApiError.ts"
import { Ledger, type Receipt } from "../../services/Ledger.ts"
import { formatUsd } from "../../services/Money.ts"
import { Transcripts } from "../../services/Transcripts.ts"
import { Api } from "../api/Api.ts"
import type { ReceiptRecord } from "../api/Records.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { quote } from "../../services/quote.ts"
import { isAdmin, selectAccount } from "./accountSelector.ts"

export const toReceiptRecord = (receipt: Receipt): typeof ReceiptRecord.Type => ({
  id: receipt.id,
  object: "receipt",
  account_id: receipt.accountId,
  request_id: receipt.requestId,
  created_at: receipt.createdAt.toISOString(),
  endpoint: receipt.endpoint,
  model: receipt.model,
  route: { tier: receipt.tier, model: receipt.model },
  privacy_class: receipt.privacyClass,
  usage: { input_tokens: receipt.usage.inputTokens, output_tokens: receipt.usage.outputTokens },
  pricing: {
    input_per_mtok_usd: formatUsd(receipt.price.input),
    output_per_mtok_usd: receipt.price.output === undefined ? null : formatUsd(receipt.price.output)
  },
  cost: {
    upstream_usd: formatUsd(receipt.cost.upstream),
    margin_usd: formatUsd(receipt.cost.margin),
    total_usd: formatUsd(receipt.cost.total)
  },
  reservation: {
    estimated_usd: formatUsd(receipt.estimated),
    reserved_at: receipt.reservedAt.toISOString(),
    settled_at: receipt.settledAt.toISOString()
  },
  balance_after_usd: formatUsd(receipt.balanceAfter),
  attempts: receipt.attempts.map((attempt) => ({
    model: attempt.model,
    outcome: attempt.outcome,
    latency_ms: attempt.latencyMs
  })),
  ...(receipt.attestationVerdicts !== undefined ? { attestation_verdict_ids: receipt.attestationVerdicts } : {}),
  ...(receipt.lineItems !== undefined
    ? {
      line_items: receipt.lineItems.map((item) => ({
        step: item.step,
        model: item.model,
        usage: { input_tokens: item.usage.inputTokens, output_tokens: item.usage.outputTokens },
        cost: {
          upstream_usd: formatUsd(item.cost.upstream),
          margin_usd: formatUsd(item.cost.margin),
          total_usd: formatUsd(item.cost.total)
        }
      }))
    }
    : {})
})

export const ReceiptsHandlers = HttpApiBuilder.group(Api, "receipts", (handlers) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const transcripts = yield* Transcripts
    return handlers
      .handle("getReceipt", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          // An admin key that names no account reads the receipt of whichever account it belongs to.
          const owner = urlParams.accountId === undefined && isAdmin(principal)
            ? null
            : yield* selectAccount(principal, urlParams.accountId)
          return toReceiptRecord(yield* ledger.receipt(owner, path.id, true))
        }))
      .handle("getTranscript", ({ path }) =>
        Effect.gen(function*() {
          const { accountId } = yield* CurrentPrincipal
          if (accountId === null) return yield* new NotFound({ message: `No transcript for receipt ${quote(path.id)}.`, param: "id" })
          const transcript = yield* transcripts.get(accountId, path.id)
          return {
            object: "transcript" as const,
            receipt_id: transcript.receiptId,
            privacy_class: "standard_route" as const,
            created_at: transcript.createdAt.toISOString(),
            expires_at: transcript.expiresAt.toISOString(),
            messages: transcript.messages,
            completion: transcript.completion
          }
        }))
  }))
