/**
 * The ledger's statements that free credit without charging: releasing a
 * failed call's reservation, and sweeping the reservations whose lease ran
 * out (their process died), credit leases included — and the heartbeat that
 * keeps a running call's lease from running out. Each closes a reservation
 * once, so releasing twice or sweeping from several processes frees it once.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Ids } from "../../services/Ids.ts"
import type { Reservation } from "../../services/Ledger.ts"

/** Frees one reservation if it is still open, with a `payment.released` event (`call_failed`). */
export const makeRelease = (sql: SqlClient.SqlClient, ids: typeof Ids.Service) => (reservation: Reservation) =>
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
    FROM freed`.pipe(Effect.asVoid, Effect.orDie)

/** Restarts the leases of open reservations from now (the heartbeat of this process's running calls). */
export const makeRenew = (sql: SqlClient.SqlClient, lease: number) => (reservations: ReadonlyArray<Reservation>) =>
  sql`
    UPDATE reservations SET expires_at = now() + make_interval(secs => ${lease})
    WHERE id IN (SELECT jsonb_array_elements_text(${JSON.stringify(reservations.map((held) => held.id))}::jsonb))
      AND status = 'open'`.pipe(Effect.asVoid, Effect.orDie)

/**
 * Releases every open reservation whose lease ran out, but those in `kept`, with an event each
 * (`lease_expired`), and frees every credit lease that ran out (its process stopped renewing it);
 * answers how many of both.
 */
export const sweepExpired = (sql: SqlClient.SqlClient) => (kept: ReadonlyArray<string> = []) =>
  sql<{ released: number }>`
    WITH expired AS (
      UPDATE reservations SET status = 'released', closed_at = now()
      WHERE status = 'open' AND expires_at < now() AND NOT (${JSON.stringify(kept)}::jsonb ? id)
      RETURNING id, account_id, request_id, amount_usd
    ), expired_leases AS (
      DELETE FROM credit_leases WHERE expires_at < now() RETURNING account_id, amount_usd
    ), per_account AS (
      SELECT account_id, sum(amount_usd) AS amount
      FROM (SELECT account_id, amount_usd FROM expired UNION ALL SELECT account_id, amount_usd FROM expired_leases) freed
      GROUP BY account_id
    ), account AS (
      UPDATE accounts SET reserved_usd = accounts.reserved_usd - per_account.amount
      FROM per_account WHERE accounts.id = per_account.account_id
    ), event AS (
      INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
      SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), 'payment.released', account_id, request_id, id,
             jsonb_build_object('amount_usd', amount_usd::text, 'reason', 'lease_expired')
      FROM expired
    )
    SELECT ((SELECT count(*) FROM expired) + (SELECT count(*) FROM expired_leases))::int AS released`.pipe(
    Effect.map(([row]) => row?.released ?? 0),
    Effect.orDie
  )
