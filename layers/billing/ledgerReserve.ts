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

/** The columns of a reservation's input rows (`reservationInput`). */
export const RESERVATION_COLUMNS = "ord int, id text, request_id text, amount numeric, event_id text"

/**
 * The admission of the calls in `reserve_input`, in arrival order, from what the account has
 * available (`locked.available`, under its row lock): the `walk`, the calls `admitted`, their
 * `reservation` rows (lease: $3 seconds) and the `reserve_events` to insert with any others.
 */
export const RESERVATION_WALK = `
  walk (ord, remaining, admitted) AS (
    SELECT 0, available, false FROM locked
    UNION ALL
    SELECT reserve_input.ord,
           CASE WHEN reserve_input.amount <= walk.remaining THEN walk.remaining - reserve_input.amount ELSE walk.remaining END,
           reserve_input.amount <= walk.remaining
    FROM walk JOIN reserve_input ON reserve_input.ord = walk.ord + 1
  ), admitted AS (
    SELECT reserve_input.* FROM reserve_input JOIN walk USING (ord) WHERE walk.admitted
  ), reservation AS (
    INSERT INTO reservations (id, account_id, request_id, amount_usd, expires_at)
    SELECT id, $2, request_id, amount, now() + make_interval(secs => $3) FROM admitted
    RETURNING id, created_at
  ), reserve_events AS (
    SELECT event_id AS id, 'payment.reserved' AS type, request_id, id AS receipt_id,
           jsonb_build_object('amount_usd', amount::text) AS data
    FROM admitted
    UNION ALL
    SELECT event_id, 'payment.insufficient_funds', request_id, NULL, jsonb_build_object('estimated_usd', amount::text)
    FROM reserve_input WHERE ord NOT IN (SELECT ord FROM admitted)
  )`

/** The reservations made, each with what the account had available right after it. */
export const RESERVATIONS_MADE = `
  SELECT reservation.id, reservation.created_at, walk.remaining::text AS available_after
  FROM reservation JOIN admitted USING (id) JOIN walk USING (ord)`

/**
 * The reservation of a batch: $1 the calls (JSON, `reservationInput`), $2 the account, $3 the
 * lease in seconds. Answers the reservations made, each with what the account had available
 * right after it.
 */
const RESERVE = `
  WITH RECURSIVE reserve_input AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(${RESERVATION_COLUMNS})
  ), locked AS (
    SELECT balance_usd - reserved_usd AS available FROM accounts WHERE id = $2 FOR UPDATE
  ), ${RESERVATION_WALK}, held AS (
    UPDATE accounts SET reserved_usd = reserved_usd + (SELECT sum(amount) FROM admitted)
    WHERE id = $2 AND EXISTS (SELECT 1 FROM admitted)
  ), event AS (
    INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
    SELECT id, type, $2, request_id, receipt_id, data FROM reserve_events
  )
  ${RESERVATIONS_MADE}`

export interface ReservationRow {
  readonly id: string
  readonly created_at: Date
  readonly available_after: string
}

/** The input rows of a batch of reservations: each call's new id and event id. */
export const reservationInput = (ids: typeof Ids.Service, items: ReadonlyArray<ReserveItem>) =>
  items.map((item, i) => ({
    ord: i + 1,
    id: ids.make("rcpt"),
    request_id: item.requestId,
    amount: usd(item.amount),
    event_id: ids.make("evt")
  }))

/** Each call's reservation from the rows made; a call without one was refused. */
export const reservationExits = (
  accountId: string,
  items: ReadonlyArray<ReserveItem>,
  input: ReturnType<typeof reservationInput>,
  rows: ReadonlyArray<ReservationRow>
) => {
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
}

/** `lease`: seconds a reservation stays open before the sweeper may release it. */
export const makeReserveBatch = (run: StatementRunner, ids: typeof Ids.Service, lease: number) =>
  (accountId: string, items: ReadonlyArray<ReserveItem>) =>
    Effect.gen(function*() {
      const input = reservationInput(ids, items)
      const rows = yield* run<ReservationRow>(RESERVE, [JSON.stringify(input), accountId, lease]).pipe(Effect.orDie)
      return reservationExits(accountId, items, input, rows)
    })
