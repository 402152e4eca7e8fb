/**
 * The ledger's settlement statement: one account's calls settled together —
 * each open reservation closed once, charged at most what it held (the clamp
 * rule), and its receipt, ledger entry and events written. A call the sweeper
 * got to first (it outlived its lease) is settled alone afterwards.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Ids } from "../../services/Ids.ts"
import { formatUsd, fromNumericColumn, type Nanos } from "../../services/Money.ts"
import { type SettleItem, settledReceipt, type SettledRow } from "./ledgerRows.ts"

const money = fromNumericColumn
const usd = formatUsd
const min = (a: Nanos, b: Nanos) => (a < b ? a : b)

/** Settles one account's calls; answers each call's exit, in order. */
export const makeSettleBatch = (sql: SqlClient.SqlClient, ids: typeof Ids.Service) => {
  /** The settlement row of one call, as the batch statement reads it. */
  const settlementInput = ({ bill, reservation }: SettleItem, ord: number) => ({
    ord,
    id: reservation.id,
    request_id: reservation.requestId,
    endpoint: bill.endpoint,
    model: bill.model,
    tier: bill.tier,
    privacy_class: bill.privacyClass,
    input_tokens: bill.usage.inputTokens,
    output_tokens: bill.usage.outputTokens,
    input_price: usd(bill.price.input),
    output_price: bill.price.output === undefined ? null : usd(bill.price.output),
    upstream: usd(bill.cost.upstream),
    total: usd(bill.cost.total),
    estimated: usd(reservation.amount),
    reserved_at: reservation.reservedAt.toISOString(),
    attempts: bill.attempts,
    provider_id: bill.providerId,
    entry_id: ids.make("led"),
    settled_event_id: ids.make("evt"),
    receipt_event_id: ids.make("evt"),
    attestation_verdicts: bill.attestationVerdicts ?? null,
    call_events: (bill.events ?? []).map((event) => ({ id: ids.make("evt"), type: event.type, data: event.data }))
  })

  /**
   * Settles calls of one account in one statement: close each open reservation, charge at most
   * what it held, and write the receipts, their ledger entries and events. A call whose
   * reservation is not open gets no receipt row back.
   */
  const settleStatement = (accountId: string, items: ReadonlyArray<SettleItem>) =>
    sql<SettledRow>`
      WITH input AS (
        SELECT * FROM jsonb_to_recordset(${JSON.stringify(items.map((item, i) => settlementInput(item, i + 1)))}::jsonb)
          AS x(
            ord int, id text, request_id text, endpoint text, model text, tier text, privacy_class text,
            input_tokens int, output_tokens int, input_price numeric, output_price numeric, upstream numeric,
            total numeric, estimated numeric, reserved_at timestamptz, attempts jsonb, provider_id text,
            entry_id text, settled_event_id text, receipt_event_id text, call_events jsonb, attestation_verdicts jsonb)
      ), closed AS (
        UPDATE reservations SET status = 'settled', closed_at = now()
        FROM input
        WHERE reservations.id = input.id AND reservations.account_id = ${accountId} AND reservations.status = 'open'
        RETURNING reservations.id, reservations.amount_usd
      ), billed AS (
        SELECT input.*, least(input.total, closed.amount_usd) AS charge, closed.amount_usd AS held
        FROM input JOIN closed USING (id)
      ), charged AS (
        UPDATE accounts
        SET balance_usd = balance_usd - (SELECT sum(charge) FROM billed),
            reserved_usd = reserved_usd - (SELECT sum(held) FROM billed)
        WHERE id = ${accountId} AND EXISTS (SELECT 1 FROM billed)
        RETURNING balance_usd + (SELECT sum(charge) FROM billed) AS balance_before
      ), receipt AS (
        INSERT INTO receipts (
          id, account_id, request_id, endpoint, model, tier, privacy_class, input_tokens, output_tokens,
          input_per_mtok_usd, output_per_mtok_usd, upstream_usd, margin_usd, total_usd, estimated_usd,
          reserved_at, balance_after_usd, attempts, provider_id, attestation_verdicts)
        SELECT
          id, ${accountId}, request_id, endpoint, model, tier, privacy_class, input_tokens, output_tokens,
          input_price, output_price, upstream, charge - upstream, charge, estimated, reserved_at,
          charged.balance_before - sum(charge) OVER (ORDER BY ord), attempts, provider_id, attestation_verdicts
        FROM billed, charged
        RETURNING *
      ), entry AS (
        INSERT INTO ledger_entries (id, account_id, kind, amount_usd, reference, balance_after_usd)
        SELECT billed.entry_id, ${accountId}, 'charge', -receipt.total_usd, receipt.id, receipt.balance_after_usd
        FROM receipt JOIN billed USING (id)
      ), event AS (
        INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
        SELECT billed.settled_event_id, 'payment.settled', ${accountId}, receipt.request_id, receipt.id,
               jsonb_build_object(
                 'total_usd', receipt.total_usd::text,
                 'released_usd', (receipt.estimated_usd - receipt.total_usd)::text)
        FROM receipt JOIN billed USING (id)
        UNION ALL
        SELECT billed.receipt_event_id, 'receipt.created', ${accountId}, receipt.request_id, receipt.id,
               jsonb_build_object('model', receipt.model, 'total_usd', receipt.total_usd::text)
        FROM receipt JOIN billed USING (id)
        UNION ALL
        SELECT call_event.id, call_event.type, ${accountId}, receipt.request_id, receipt.id, call_event.data
        FROM receipt JOIN billed USING (id),
             jsonb_to_recordset(billed.call_events) AS call_event(id text, type text, data jsonb)
      )
      SELECT id, total_usd, balance_after_usd, created_at, settled_at FROM receipt`

  /**
   * The sweeper freed the reservation first (the call outlived its lease), so it holds nothing:
   * hold again what the call costs, up to what is available now, and settle as usual.
   */
  const settleAfterSweep = (item: SettleItem) =>
    Effect.gen(function*() {
      const { accountId, id } = item.reservation
      const [account] = yield* sql<{ available: string }>`
        SELECT greatest(balance_usd - reserved_usd, 0)::text AS available
        FROM accounts WHERE id = ${accountId} FOR UPDATE`
      const hold = usd(min(item.bill.cost.total, money(account!.available)))
      yield* sql`
        WITH reopened AS (
          UPDATE reservations SET status = 'open', amount_usd = ${hold}::numeric, closed_at = NULL
          WHERE id = ${id} AND status = 'released'
          RETURNING account_id
        )
        UPDATE accounts SET reserved_usd = reserved_usd + ${hold}::numeric
        FROM reopened WHERE accounts.id = reopened.account_id`
      const [row] = yield* settleStatement(accountId, [item])
      if (row === undefined) return yield* Effect.dieMessage(`Reservation ${id} was settled already.`)
      return settledReceipt(item, row)
    }).pipe(sql.withTransaction, Effect.orDie)

  /** One account's settlements in one statement; those the sweeper got to first, one by one after. */
  const settleBatch = (accountId: string, items: ReadonlyArray<SettleItem>) =>
    Effect.gen(function*() {
      const rows = yield* Effect.orDie(settleStatement(accountId, items))
      const byId = new Map(rows.map((row) => [row.id, row]))
      return yield* Effect.forEach(items, (item) => {
        const row = byId.get(item.reservation.id)
        return Effect.exit(row !== undefined ? Effect.succeed(settledReceipt(item, row)) : settleAfterSweep(item))
      })
    })

  return settleBatch
}
