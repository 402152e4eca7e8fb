/**
 * The ledger's rows as PostgreSQL returns them, turned into receipts, and the
 * items a turn of ledger statements carries (layers/billing/LedgerPg.ts).
 */
import type { Tier } from "../../services/Catalogue.ts"
import type { PrivacyClass } from "../../services/Config.ts"
import { type Attempt, type Bill, type LineItem, type Receipt, receiptOf, type Reservation } from "../../services/Ledger.ts"
import { formatUsd, fromNumericColumn, type Nanos } from "../../services/Money.ts"

export interface ReceiptRow {
  readonly id: string
  readonly account_id: string
  readonly request_id: string
  readonly endpoint: string
  readonly model: string
  readonly tier: Tier
  readonly privacy_class: PrivacyClass
  readonly input_tokens: number
  readonly output_tokens: number
  readonly input_per_mtok_usd: string
  readonly output_per_mtok_usd: string | null
  readonly upstream_usd: string
  readonly margin_usd: string
  readonly total_usd: string
  readonly estimated_usd: string
  readonly reserved_at: Date
  readonly settled_at: Date
  readonly balance_after_usd: string
  readonly attempts: ReadonlyArray<Attempt>
  readonly attestation_verdicts: ReadonlyArray<string> | null
  readonly line_items: ReadonlyArray<LineItemColumn> | null
  readonly key_id: string | null
  readonly created_at: Date
}

const money = fromNumericColumn

export const toReceipt = (row: ReceiptRow): Receipt => ({
  id: row.id,
  accountId: row.account_id,
  requestId: row.request_id,
  createdAt: row.created_at,
  endpoint: row.endpoint,
  model: row.model,
  tier: row.tier,
  privacyClass: row.privacy_class,
  usage: { inputTokens: row.input_tokens, outputTokens: row.output_tokens },
  price: {
    input: money(row.input_per_mtok_usd),
    output: row.output_per_mtok_usd === null ? undefined : money(row.output_per_mtok_usd)
  },
  cost: { upstream: money(row.upstream_usd), margin: money(row.margin_usd), total: money(row.total_usd) },
  estimated: money(row.estimated_usd),
  reservedAt: row.reserved_at,
  settledAt: row.settled_at,
  balanceAfter: money(row.balance_after_usd),
  attempts: row.attempts,
  ...(row.attestation_verdicts !== null ? { attestationVerdicts: row.attestation_verdicts } : {}),
  ...(row.line_items !== null ? { lineItems: row.line_items.map(fromLineItemColumn) } : {}),
  ...(row.key_id !== null ? { keyId: row.key_id } : {})
})

/** A line item as the `line_items` column keeps it: its amounts as decimal dollars. */
export interface LineItemColumn {
  readonly step: LineItem["step"]
  readonly model: string
  readonly input_tokens: number
  readonly output_tokens: number
  readonly upstream_usd: string
  readonly margin_usd: string
  readonly total_usd: string
}

export const lineItemColumn = (item: LineItem): LineItemColumn => ({
  step: item.step,
  model: item.model,
  input_tokens: item.usage.inputTokens,
  output_tokens: item.usage.outputTokens,
  upstream_usd: formatUsd(item.cost.upstream),
  margin_usd: formatUsd(item.cost.margin),
  total_usd: formatUsd(item.cost.total)
})

const fromLineItemColumn = (column: LineItemColumn): LineItem => ({
  step: column.step,
  model: column.model,
  usage: { inputTokens: column.input_tokens, outputTokens: column.output_tokens },
  cost: { upstream: money(column.upstream_usd), margin: money(column.margin_usd), total: money(column.total_usd) }
})

/** What a settlement statement answers per call; the rest of the receipt is the bill. */
export interface SettledRow {
  readonly id: string
  readonly total_usd: string
  readonly balance_after_usd: string
  readonly created_at: Date
  readonly settled_at: Date
}

export const settledReceipt = ({ bill, reservation }: SettleItem, row: SettledRow): Receipt =>
  receiptOf(reservation, bill, {
    total: money(row.total_usd),
    balanceAfter: money(row.balance_after_usd),
    createdAt: row.created_at,
    settledAt: row.settled_at
  })

export interface ReserveItem {
  readonly _tag: "reserve"
  readonly requestId: string
  readonly amount: Nanos
}

export interface SettleItem {
  readonly _tag: "settle"
  readonly reservation: Reservation
  readonly bill: Bill
}

/** More credit for a process's lease on the account (creditLeases.ts). */
export interface LeaseItem {
  readonly _tag: "lease"
  readonly leaseId: string
  readonly amount: Nanos
}

/** A lease's credit given back. */
export interface GiveBackItem {
  readonly _tag: "giveBack"
  readonly leaseId: string
}

/** What a lease item answers: the credit granted (all asked, or none) and what the account has available after it. */
export interface LeaseGrant {
  readonly granted: Nanos
  readonly availableAfter: Nanos | undefined
}

export type LedgerItem = ReserveItem | SettleItem | LeaseItem | GiveBackItem

/** What a ledger turn answers an item: a reservation, a receipt, a lease's grant, or nothing (a give back). */
export type LedgerAnswer = Reservation | Receipt | LeaseGrant | void
