/**
 * The ledger's reservation statement: one account's calls admitted in arrival
 * order while the available balance covers them, under the account's row lock,
 * so concurrent calls in any number of processes never reserve more than
 * there is. Each call gets a `payment.reserved` or `payment.insufficient_funds` event.
 */
import { Effect, Exit } from "effect"
import type { InsufficientFunds } from "../../services/ApiError.ts"
import type { Ids } from "../../services/Ids.ts"
import type { Reservation } from "../../services/Ledger.ts"
import { formatUsd, fromNumericColumn } from "../../services/Money.ts"
import type { StatementRunner } from "../storage/pgPool.ts"
import { cannotCover } from "./ledgerRefusals.ts"
import type { ReserveItem } from "./ledgerRows.ts"

const usd = formatUsd

/**
 * The reservation of a batch: $1 the calls (JSON: ord, id, request_id, amount, event_id), $2 the
 * account, $3 the lease in seconds. Answers the reservations made, each with what the account
 * had available right after it.
 */
const RESERVE = `
  WITH RECURSIVE input AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb)
      AS x(ord int, id text, request_id text, amount numeric, event_id text)
  ), locked AS (
    SELECT balance_usd - reserved_usd AS available FROM accounts WHERE id = $2 FOR UPDATE
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
    WHERE id = $2 AND EXISTS (SELECT 1 FROM admitted)
  ), reservation AS (
    INSERT INTO reservations (id, account_id, request_id, amount_usd, expires_at)
    SELECT id, $2, request_id, amount, now() + make_interval(secs => $3) FROM admitted
    RETURNING id, created_at
  ), event AS (
    INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
    SELECT event_id, 'payment.reserved', $2, request_id, id, jsonb_build_object('amount_usd', amount::text)
    FROM admitted
    UNION ALL
    SELECT event_id, 'payment.insufficient_funds', $2, request_id, NULL,
           jsonb_build_object('estimated_usd', amount::text)
    FROM input WHERE ord NOT IN (SELECT ord FROM admitted)
  )
  SELECT reservation.id, reservation.created_at, walk.remaining::text AS available_after
  FROM reservation JOIN admitted USING (id) JOIN walk USING (ord)`

/** `lease`: seconds a reservation stays open before the sweeper may release it. */
export const makeReserveBatch = (run: StatementRunner, ids: typeof Ids.Service, lease: number) =>
  (accountId: string, items: ReadonlyArray<ReserveItem>) =>
    Effect.gen(function*() {
      const input = items.map((item, i) => ({
        ord: i + 1,
        id: ids.make("rcpt"),
        request_id: item.requestId,
        amount: usd(item.amount),
        event_id: ids.make("evt")
      }))
      const rows = yield* run<{ id: string; created_at: Date; available_after: string }>(
        RESERVE,
        [JSON.stringify(input), accountId, lease]
      ).pipe(Effect.orDie)
      const made = new Map(rows.map((row) => [row.id, row]))
      return items.map((item, i): Exit.Exit<Reservation, InsufficientFunds> => {
        const { id } = input[i]!
        const row = made.get(id)
        return row !== undefined
          ? Exit.succeed({
            id,
            accountId,
            requestId: item.requestId,
            amount: item.amount,
            reservedAt: row.created_at,
            availableAfter: fromNumericColumn(row.available_after)
          })
          : Exit.fail(cannotCover(item.amount))
      })
    })
