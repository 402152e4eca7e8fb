/**
 * The ledger in PostgreSQL. Each account's calls are batched (group commit):
 * per process, one turn of ledger statements per account is in flight, and
 * the calls that arrive meanwhile go together in the next turn (a settlement
 * statement, then a reservation statement).
 * - A reservation statement locks the account row and admits its calls in
 *   arrival order while the available balance covers them, so concurrent
 *   calls in any number of processes can never reserve more than there is.
 * - A settlement statement closes the reservations (each once), charges, and
 *   writes the ledger entries, receipts and events.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Exit, Layer } from "effect"
import { InsufficientFunds, NotFound } from "../../services/ApiError.ts"
import type { Tier } from "../../services/Catalogue.ts"
import { AppConfig, type PrivacyClass } from "../../services/Config.ts"
import { Ids } from "../../services/Ids.ts"
import { type Attempt, type Bill, Ledger, type Receipt, receiptOf, type Reservation } from "../../services/Ledger.ts"
import { formatUsd, type Nanos, fromNumericColumn } from "../../services/Money.ts"
import { makeSerialBatches } from "../storage/serialBatches.ts"

interface ReceiptRow {
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
  readonly created_at: Date
}

const money = fromNumericColumn
const usd = formatUsd

const toReceipt = (row: ReceiptRow): Receipt => ({
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
  ...(row.attestation_verdicts !== null ? { attestationVerdicts: row.attestation_verdicts } : {})
})

/** What a settlement statement answers per call; the rest of the receipt is the bill. */
interface SettledRow {
  readonly id: string
  readonly total_usd: string
  readonly balance_after_usd: string
  readonly created_at: Date
  readonly settled_at: Date
}

const settledReceipt = ({ bill, reservation }: SettleItem, row: SettledRow): Receipt =>
  receiptOf(reservation, bill, {
    total: money(row.total_usd),
    balanceAfter: money(row.balance_after_usd),
    createdAt: row.created_at,
    settledAt: row.settled_at
  })

const min = (a: Nanos, b: Nanos) => (a < b ? a : b)

interface ReserveItem {
  readonly _tag: "reserve"
  readonly requestId: string
  readonly amount: Nanos
}

interface SettleItem {
  readonly _tag: "settle"
  readonly reservation: Reservation
  readonly bill: Bill
}

type LedgerItem = ReserveItem | SettleItem

/** Calls one statement may carry; more wait for the next. */
const MAX_BATCH = 64

export const LedgerPg = Layer.scoped(
  Ledger,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const { file } = yield* AppConfig
    const lease = file.billing.reservationLeaseSeconds

    /** One account's reservations, admitted in arrival order while the available balance covers them. */
    const reserveBatch = (accountId: string, items: ReadonlyArray<ReserveItem>) =>
      Effect.gen(function*() {
        const input = items.map((item, i) => ({
          ord: i + 1,
          id: ids.make("rcpt"),
          request_id: item.requestId,
          amount: usd(item.amount),
          event_id: ids.make("evt")
        }))
        const rows = yield* sql<{ id: string; created_at: Date }>`
          WITH RECURSIVE input AS (
            SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb)
              AS x(ord int, id text, request_id text, amount numeric, event_id text)
          ), locked AS (
            SELECT balance_usd - reserved_usd AS available FROM accounts WHERE id = ${accountId} FOR UPDATE
          ), walk (ord, remaining, admitted) AS (
            SELECT 0, available, false FROM locked
            UNION ALL
            SELECT input.ord,
                   CASE WHEN input.amount <= walk.remaining THEN walk.remaining - input.amount ELSE walk.remaining END,
                   input.amount <= walk.remaining
            FROM walk JOIN input ON input.ord = walk.ord + 1
          ), admitted AS (
            SELECT input.* FROM input JOIN walk USING (ord) WHERE walk.admitted
          ), held AS (
            UPDATE accounts SET reserved_usd = reserved_usd + (SELECT sum(amount) FROM admitted)
            WHERE id = ${accountId} AND EXISTS (SELECT 1 FROM admitted)
          ), reservation AS (
            INSERT INTO reservations (id, account_id, request_id, amount_usd, expires_at)
            SELECT id, ${accountId}, request_id, amount, now() + make_interval(secs => ${lease}) FROM admitted
            RETURNING id, created_at
          ), event AS (
            INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
            SELECT event_id, 'payment.reserved', ${accountId}, request_id, id, jsonb_build_object('amount_usd', amount::text)
            FROM admitted
            UNION ALL
            SELECT event_id, 'payment.insufficient_funds', ${accountId}, request_id, NULL,
                   jsonb_build_object('estimated_usd', amount::text)
            FROM input WHERE ord NOT IN (SELECT ord FROM admitted)
          )
          SELECT id, created_at FROM reservation`.pipe(Effect.orDie)
        const reservedAt = new Map(rows.map((row) => [row.id, row.created_at]))
        return items.map((item, i): Exit.Exit<Reservation, InsufficientFunds> => {
          const { id } = input[i]!
          const at = reservedAt.get(id)
          return at !== undefined
            ? Exit.succeed({ id, accountId, requestId: item.requestId, amount: item.amount, reservedAt: at })
            : Exit.fail(
              new InsufficientFunds({
                message: `The available balance cannot cover this call's estimate of ${usd(item.amount)} USD.`
              })
            )
        })
      })

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

    /**
     * One queue per account for both kinds, so a process has at most one ledger statement of an
     * account in flight: statements of one account only queue on its row lock in PostgreSQL, and
     * waiting there costs more than waiting here. Settlements go first: they free credit.
     */
    const ledgerTurn = (accountId: string, items: ReadonlyArray<LedgerItem>) =>
      Effect.gen(function*() {
        const settling = items.flatMap((item) => item._tag === "settle" ? [item] : [])
        const reserving = items.flatMap((item) => item._tag === "reserve" ? [item] : [])
        const settled = settling.length > 0 ? yield* settleBatch(accountId, settling) : []
        const reserved = reserving.length > 0 ? yield* reserveBatch(accountId, reserving) : []
        let nextSettled = 0
        let nextReserved = 0
        return items.map((item): Exit.Exit<Reservation | Receipt, InsufficientFunds> =>
          item._tag === "settle" ? settled[nextSettled++]! : reserved[nextReserved++]!
        )
      })
    const turns = yield* makeSerialBatches(ledgerTurn, MAX_BATCH)

    return {
      // Uninterruptible: once submitted, the batch may admit it, and only the caller can release it.
      reserve: (input) =>
        Effect.uninterruptible(turns.submit(input.accountId, { _tag: "reserve", ...input })) as Effect.Effect<
          Reservation,
          InsufficientFunds
        >,

      settle: (reservation, bill) =>
        Effect.uninterruptible(turns.submit(reservation.accountId, { _tag: "settle", reservation, bill })) as Effect.Effect<
          Receipt
        >,

      release: (reservation) =>
        sql`
          WITH freed AS (
            UPDATE reservations SET status = 'released', closed_at = now()
            WHERE id = ${reservation.id} AND status = 'open'
            RETURNING id, account_id, request_id, amount_usd
          ), account AS (
            UPDATE accounts SET reserved_usd = accounts.reserved_usd - freed.amount_usd
            FROM freed WHERE accounts.id = freed.account_id
          )
          INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
          SELECT ${ids.make("evt")}, 'payment.released', account_id, request_id, id,
                 jsonb_build_object('amount_usd', amount_usd::text, 'reason', 'call_failed')
          FROM freed`.pipe(Effect.asVoid, Effect.orDie),

      sweepExpired: sql<{ released: number }>`
        WITH expired AS (
          UPDATE reservations SET status = 'released', closed_at = now()
          WHERE status = 'open' AND expires_at < now()
          RETURNING id, account_id, request_id, amount_usd
        ), per_account AS (
          SELECT account_id, sum(amount_usd) AS amount FROM expired GROUP BY account_id
        ), account AS (
          UPDATE accounts SET reserved_usd = accounts.reserved_usd - per_account.amount
          FROM per_account WHERE accounts.id = per_account.account_id
        ), event AS (
          INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
          SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), 'payment.released', account_id, request_id, id,
                 jsonb_build_object('amount_usd', amount_usd::text, 'reason', 'lease_expired')
          FROM expired
        )
        SELECT count(*)::int AS released FROM expired`.pipe(
        Effect.map(([row]) => row?.released ?? 0),
        Effect.orDie
      ),

      receipt: (accountId, id) =>
        sql<ReceiptRow>`SELECT * FROM receipts WHERE id = ${id} AND account_id = ${accountId}`.pipe(
          Effect.orDie,
          Effect.flatMap(([row]) =>
            row === undefined
              ? Effect.fail(new NotFound({ message: `No receipt ${id}.`, param: "id" }))
              : Effect.succeed(toReceipt(row))
          )
        )
    }
  })
)
