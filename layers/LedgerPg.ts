/**
 * The ledger in PostgreSQL. A reservation is one statement: the account row
 * is updated only if its available balance covers the amount, so concurrent
 * calls — in any number of processes — can never reserve more than there is.
 * Settling is one statement too: close the reservation (once), charge, and
 * write the ledger entry, the receipt and the events.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { InsufficientFunds, NotFound } from "../services/ApiError.ts"
import type { Tier } from "../services/Catalogue.ts"
import { AppConfig, type PrivacyClass } from "../services/Config.ts"
import { EventLog } from "../services/EventLog.ts"
import { Ids } from "../services/Ids.ts"
import { type Attempt, Ledger, type Receipt } from "../services/Ledger.ts"
import { formatUsd, type Nanos, fromNumericColumn } from "../services/Money.ts"

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
  attempts: row.attempts
})

const min = (a: Nanos, b: Nanos) => (a < b ? a : b)

export const LedgerPg = Layer.effect(
  Ledger,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const events = yield* EventLog
    const { file } = yield* AppConfig
    const lease = file.billing.reservationLeaseSeconds

    return {
      reserve: ({ accountId, amount, requestId }) =>
        Effect.gen(function*() {
          const id = ids.make("rcpt")
          const [row] = yield* sql<{ created_at: Date }>`
            WITH held AS (
              UPDATE accounts SET reserved_usd = reserved_usd + ${usd(amount)}::numeric
              WHERE id = ${accountId} AND balance_usd - reserved_usd >= ${usd(amount)}::numeric
              RETURNING id
            ), reservation AS (
              INSERT INTO reservations (id, account_id, request_id, amount_usd, expires_at)
              SELECT ${id}, held.id, ${requestId}, ${usd(amount)}::numeric, now() + make_interval(secs => ${lease})
              FROM held
              RETURNING id, created_at
            ), event AS (
              INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
              SELECT ${ids.make("evt")}, 'payment.reserved', ${accountId}, ${requestId}, reservation.id,
                     jsonb_build_object('amount_usd', ${usd(amount)}::text)
              FROM reservation
            )
            SELECT created_at FROM reservation`.pipe(Effect.orDie)
          if (row !== undefined) return { id, accountId, requestId, amount, reservedAt: row.created_at }
          yield* events.record({
            type: "payment.insufficient_funds",
            accountId,
            requestId,
            data: { estimated_usd: usd(amount) }
          })
          return yield* new InsufficientFunds({
            message: `The available balance cannot cover this call's estimate of ${usd(amount)} USD.`
          })
        }),

      settle: (reservation, bill) => {
        // Writes the receipt, its charge entry and events from a `charged (total, balance_after)` row.
        const recordReceipt = sql`
          receipt AS (
            INSERT INTO receipts (
              id, account_id, request_id, endpoint, model, tier, privacy_class, input_tokens, output_tokens,
              input_per_mtok_usd, output_per_mtok_usd, upstream_usd, margin_usd, total_usd, estimated_usd,
              reserved_at, balance_after_usd, attempts, provider_id)
            SELECT
              ${reservation.id}, ${reservation.accountId}, ${reservation.requestId}, ${bill.endpoint}, ${bill.model},
              ${bill.tier}, ${bill.privacyClass}, ${bill.usage.inputTokens}, ${bill.usage.outputTokens},
              ${usd(bill.price.input)}::numeric,
              ${bill.price.output === undefined ? null : usd(bill.price.output)}::numeric,
              ${usd(bill.cost.upstream)}::numeric, charged.total - ${usd(bill.cost.upstream)}::numeric, charged.total,
              ${usd(reservation.amount)}::numeric, ${reservation.reservedAt}, charged.balance_after,
              ${JSON.stringify(bill.attempts)}::jsonb, ${bill.providerId}
            FROM charged
            RETURNING *
          ), entry AS (
            INSERT INTO ledger_entries (id, account_id, kind, amount_usd, reference, balance_after_usd)
            SELECT ${ids.make("led")}, account_id, 'charge', -total_usd, id, balance_after_usd FROM receipt
          ), event AS (
            INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
            SELECT ${ids.make("evt")}, 'payment.settled', account_id, request_id, id,
                   jsonb_build_object('total_usd', total_usd::text, 'released_usd', (estimated_usd - total_usd)::text)
            FROM receipt
            UNION ALL
            SELECT ${ids.make("evt")}, 'receipt.created', account_id, request_id, id,
                   jsonb_build_object('model', model, 'total_usd', total_usd::text)
            FROM receipt
          )`
        const total = usd(bill.cost.total)

        // The usual case in one statement: close the open reservation, charge at most what it held.
        const fromReservation = sql<ReceiptRow>`
          WITH closed AS (
            UPDATE reservations SET status = 'settled', closed_at = now()
            WHERE id = ${reservation.id} AND status = 'open'
            RETURNING account_id, amount_usd
          ), charged AS (
            UPDATE accounts
            SET balance_usd = accounts.balance_usd - least(${total}::numeric, closed.amount_usd),
                reserved_usd = accounts.reserved_usd - closed.amount_usd
            FROM closed WHERE accounts.id = closed.account_id
            RETURNING least(${total}::numeric, closed.amount_usd) AS total, accounts.balance_usd AS balance_after
          ), ${recordReceipt}
          SELECT * FROM receipt`

        // The sweeper freed the reservation first (the call outlived its lease): it holds nothing,
        // so charge only what is available now.
        const fromAvailable = Effect.gen(function*() {
          const [row] = yield* sql<{ available: string }>`
            SELECT greatest(balance_usd - reserved_usd, 0)::text AS available
            FROM accounts WHERE id = ${reservation.accountId} FOR UPDATE`
          const charge = usd(min(bill.cost.total, money(row!.available)))
          return yield* sql<ReceiptRow>`
            WITH settled AS (
              UPDATE reservations SET status = 'settled', closed_at = now() WHERE id = ${reservation.id}
            ), charged AS (
              UPDATE accounts SET balance_usd = balance_usd - ${charge}::numeric
              WHERE id = ${reservation.accountId}
              RETURNING ${charge}::numeric AS total, balance_usd AS balance_after
            ), ${recordReceipt}
            SELECT * FROM receipt`
        }).pipe(sql.withTransaction)

        return fromReservation.pipe(
          Effect.flatMap(([row]) => row !== undefined ? Effect.succeed([row]) : fromAvailable),
          Effect.map(([row]) => toReceipt(row!)),
          Effect.orDie
        )
      },

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
