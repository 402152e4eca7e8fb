/**
 * The statements of a process's credit lease on an account
 * (creditLeases.ts): taking or growing it from what the account has
 * available, giving it back, and writing the reservation rows of a call held
 * from it and released (a settled call's are written by its settlement,
 * ledgerSettle.ts). A lease is granted only while it is at most a sixteenth
 * of what the account has available, so near the balance's end every call
 * reserves on its own, exactly as before.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Ids } from "../../services/Ids.ts"
import type { Reservation } from "../../services/Ledger.ts"
import { formatUsd, fromNumericColumn, type Nanos } from "../../services/Money.ts"
import type { StatementRunner } from "../storage/pgPool.ts"

/** A lease is granted only while it is at most this share of what the account has available. */
export const LEASE_SHARE = 16n

/**
 * $1 the lease, $2 the account, $3 the amount asked, $4 the lease in seconds: grants all of it
 * (creating or growing the lease) or nothing, under the account's row lock. Answers what was
 * granted and what the account has available after it.
 */
const TAKE = `
  WITH locked AS (
    SELECT balance_usd - reserved_usd AS available FROM accounts WHERE id = $2 FOR UPDATE
  ), granted AS (
    SELECT CASE WHEN $3::numeric * ${LEASE_SHARE} <= available THEN $3::numeric ELSE 0 END AS amount, available
    FROM locked
  ), leased AS (
    INSERT INTO credit_leases (id, account_id, amount_usd, expires_at)
    SELECT $1, $2, amount, now() + make_interval(secs => $4) FROM granted WHERE amount > 0
    ON CONFLICT (id) DO UPDATE
      SET amount_usd = credit_leases.amount_usd + EXCLUDED.amount_usd, expires_at = EXCLUDED.expires_at
  ), held AS (
    UPDATE accounts SET reserved_usd = reserved_usd + granted.amount FROM granted
    WHERE accounts.id = $2 AND granted.amount > 0
  )
  SELECT amount::text AS granted, (available - amount)::text AS available_after FROM granted`

/** $1 the lease: gives back what it still holds. */
const GIVE_BACK = `
  WITH gone AS (
    DELETE FROM credit_leases WHERE id = $1 RETURNING account_id, amount_usd
  )
  UPDATE accounts SET reserved_usd = reserved_usd - gone.amount_usd FROM gone WHERE accounts.id = gone.account_id`

export const makeLeaseStatements = (run: StatementRunner, sql: SqlClient.SqlClient, ids: typeof Ids.Service, lease: number) => ({
  /** Takes `amount` more credit into lease `id` (made if new): what was granted (all or nothing) and what is left available. */
  take: (id: string, accountId: string, amount: Nanos) =>
    Effect.map(
      run<{ granted: string; available_after: string }>(TAKE, [id, accountId, formatUsd(amount), lease]),
      ([row]) => ({
        granted: row === undefined ? 0n : fromNumericColumn(row.granted),
        availableAfter: row === undefined ? undefined : fromNumericColumn(row.available_after)
      })
    ),

  /** Restarts the given leases' time from now; answers those that still exist (the others were swept). */
  renew: (leaseIds: ReadonlyArray<string>) =>
    Effect.map(
      run<{ id: string }>(
        "UPDATE credit_leases SET expires_at = now() + make_interval(secs => $2) WHERE id = ANY ($1::text[]) RETURNING id",
        [leaseIds, lease]
      ),
      (rows) => new Set(rows.map((row) => row.id))
    ),

  /** Gives back all a lease still holds (calls held from it and settled later free nothing twice). */
  giveBack: (id: string) => Effect.asVoid(run(GIVE_BACK, [id])),

  /**
   * The rows of a call held from a lease and released: its reservation (released) and its
   * `payment.reserved` and `payment.released` events, once (a call that ended already writes none).
   * No money moves: the credit stays in the lease.
   */
  released: (reservation: Reservation) =>
    sql`
      WITH reservation AS (
        INSERT INTO reservations (id, account_id, request_id, amount_usd, status, created_at, expires_at, closed_at)
        VALUES (${reservation.id}, ${reservation.accountId}, ${reservation.requestId}, ${formatUsd(reservation.amount)}::numeric,
                'released', least(${reservation.reservedAt}::timestamptz, now()), now(), now())
        ON CONFLICT (id) DO NOTHING
        RETURNING id, account_id, request_id, amount_usd, created_at
      )
      INSERT INTO events (id, type, account_id, request_id, receipt_id, data, created_at)
      SELECT ${ids.make("evt")}, 'payment.reserved', account_id, request_id, id,
             jsonb_build_object('amount_usd', amount_usd::text), created_at
      FROM reservation
      UNION ALL
      SELECT ${ids.make("evt")}, 'payment.released', account_id, request_id, id,
             jsonb_build_object('amount_usd', amount_usd::text, 'reason', 'call_failed'), now()
      FROM reservation
      RETURNING 1`.pipe(Effect.asVoid, Effect.orDie)
})
