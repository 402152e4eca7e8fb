/**
 * The spec's billing headers (4.4) of a settled call's JSON response. A
 * settlement still kept in the journal (the database was unreachable) has the
 * same amounts — what the ledger will charge — and `x-svc-receipt-pending:
 * true`: its receipt appears at `GET /v1/receipts/{id}` once it is written.
 */
import { isPending, type Settlement } from "../../services/Billing.ts"
import { formatUsd } from "../../services/Money.ts"

export const billingHeaders = (receipt: Settlement): Record<string, string> => ({
  "x-svc-upstream-cost-usd": formatUsd(receipt.cost.upstream),
  "x-svc-margin-usd": formatUsd(receipt.cost.margin),
  "x-svc-total-usd": formatUsd(receipt.cost.total),
  "x-svc-receipt-id": receipt.id,
  ...(isPending(receipt) ? { "x-svc-receipt-pending": "true" } : {})
})
