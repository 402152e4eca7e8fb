/**
 * One account's ledger turn in one statement, when it has settlements and
 * reservations both (a busy account: calls ending while others begin). The
 * settlements close their reservations and charge their bills, and the
 * reservations are admitted from what is available after that, under the
 * account's row lock, as the two statements would one after the other
 * (ledgerSettle.ts, ledgerReserve.ts); one round trip and one commit instead
 * of two halves how long a busy account's calls wait for their turn.
 * The account row is updated once: PostgreSQL lets a statement change a row
 * only once, so the charge and the holds go in one `UPDATE`. A settlement
 * the sweeper got to first is settled afterwards in a transaction of its
 * own, as ledgerSettle.ts does, charging any excess over what is then
 * available as an overage.
 */
import { Effect, type Exit } from "effect"
import type { InsufficientFunds } from "../../services/ApiError.ts"
import type { Ids } from "../../services/Ids.ts"
import type { Receipt, Reservation } from "../../services/Ledger.ts"
import type { StatementRunner } from "../storage/pgPool.ts"
import {
  RESERVATION_COLUMNS,
  RESERVATION_WALK,
  reservationExits,
  reservationInput,
  type ReservationRow
} from "./ledgerReserve.ts"
import type { ReserveItem, SettledRow, SettleItem } from "./ledgerRows.ts"
import { type makeSettleBatch, SETTLEMENT_CLOSING, SETTLEMENT_WRITES, settlementRows } from "./ledgerSettle.ts"

/**
 * $1 the settlements (JSON, `settlementInput`), $2 the account, $3 the lease in seconds, $4 the
 * reservations (JSON, `reservationInput`). Answers a `settled` row per receipt written and a
 * `reserved` row per reservation made.
 */
export const TURN = `
  WITH RECURSIVE input AS (${settlementRows("$1")}
  ), reserve_input AS (
    SELECT * FROM jsonb_to_recordset($4::jsonb) AS x(${RESERVATION_COLUMNS})
  ), ${SETTLEMENT_CLOSING}, settled_sum AS (
    SELECT coalesce(sum(charge), 0) AS charge, (SELECT held FROM freed) AS held FROM billed
  ), locked AS (
    SELECT (balance_usd - settled_sum.charge) - (reserved_usd - settled_sum.held) AS available
    FROM accounts, settled_sum WHERE id = $2 FOR UPDATE OF accounts
  ), ${RESERVATION_WALK}, charged AS (
    UPDATE accounts
    SET balance_usd = balance_usd - (SELECT charge FROM settled_sum),
        reserved_usd = reserved_usd - (SELECT held FROM settled_sum) + coalesce((SELECT sum(amount) FROM admitted), 0)
    WHERE id = $2
    RETURNING balance_usd + (SELECT charge FROM settled_sum) AS balance_before
  ), ${SETTLEMENT_WRITES}, event AS (
    INSERT INTO events (id, type, account_id, request_id, receipt_id, data, created_at)
    SELECT id, type, $2, request_id, receipt_id, data, created_at FROM settled_events
    UNION ALL
    SELECT id, type, $2, request_id, receipt_id, data, now() FROM reserve_events
  )
  SELECT 'settled' AS kind, id, total_usd, balance_after_usd, created_at, settled_at, NULL::text AS available_after
  FROM receipt
  UNION ALL
  SELECT 'reserved', reservation.id, NULL, NULL, reservation.created_at, NULL, walk.remaining::text
  FROM reservation JOIN admitted USING (id) JOIN walk USING (ord)`

type TurnRow = (SettledRow & { readonly kind: "settled" }) | (ReservationRow & { readonly kind: "reserved" })

/**
 * Settles and reserves for one account in one statement; each call's exit, settlements then
 * reservations. Fails as a whole when the statement fails: then nothing of it was written, and
 * the caller can settle and reserve apart.
 */
export const makeLedgerTurn = (
  run: StatementRunner,
  ids: typeof Ids.Service,
  lease: number,
  settlement: ReturnType<typeof makeSettleBatch>
) =>
(accountId: string, settling: ReadonlyArray<SettleItem>, reserving: ReadonlyArray<ReserveItem>) =>
  Effect.gen(function*() {
    const reservations = reservationInput(ids, reserving)
    const rows = yield* run<TurnRow>(TURN, [
      JSON.stringify(settling.map(settlement.settlementInput)),
      accountId,
      lease,
      JSON.stringify(reservations)
    ])
    const settled: Array<SettledRow> = []
    const reserved: Array<ReservationRow> = []
    for (const row of rows) {
      if (row.kind === "settled") settled.push(row)
      else reserved.push(row)
    }
    const receipts: ReadonlyArray<Exit.Exit<Receipt>> = yield* settlement.answerRows(settling, settled)
    const holds: ReadonlyArray<Exit.Exit<Reservation, InsufficientFunds>> = reservationExits(
      accountId,
      reserving,
      reservations,
      reserved
    )
    return { receipts, holds }
  })
