/** The spec's billing headers (4.4) of a settled call's JSON response. */
import type { Receipt } from "../../services/Ledger.ts"
import { formatUsd } from "../../services/Money.ts"

export const billingHeaders = (receipt: Receipt) => ({
  "x-svc-upstream-cost-usd": formatUsd(receipt.cost.upstream),
  "x-svc-margin-usd": formatUsd(receipt.cost.margin),
  "x-svc-total-usd": formatUsd(receipt.cost.total),
  "x-svc-receipt-id": receipt.id
})
