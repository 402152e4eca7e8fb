/**
 * A settled call's own events are read from its receipt instead of being
 * stored beside it: `payment.settled`, `receipt.created` and, for a call held
 * from a credit lease, `payment.reserved` follow from the receipt's columns,
 * so each billed call writes three event rows (and their twelve index
 * entries) fewer (docs/performance.md, item 57). `settlement_events(receipt)`
 * is their one definition; `event_log` is every event, stored or derived,
 * for SQL readers (the API reads pages through layers/events/EventLogPg.ts).
 *
 * Positions: the events' sequence (`event_positions`) steps by 4, and a
 * receipt takes one value of it (`event_seq`), so its derived events sit at
 * `event_seq + 0..2` in its transaction without meeting a stored event's.
 * Receipts without an `event_seq` (written before this migration, or by a
 * process of the previous version during a rollout) had their events stored.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [sequence] = yield* sql<{ name: string }>`SELECT pg_get_serial_sequence('events', 'seq') AS name`
  // Named, for the settlement statement's `nextval('event_positions')`.
  yield* sql.unsafe(`ALTER SEQUENCE ${sequence!.name} RENAME TO event_positions`)
  yield* sql`ALTER TABLE events ALTER COLUMN seq SET INCREMENT BY 4`
  // No default: a process of the previous version, still serving during a rollout, writes its
  // receipts without one and stores their events, as it always did.
  yield* sql`ALTER TABLE receipts ADD COLUMN event_seq bigint`
  yield* sql`ALTER TABLE receipts ADD COLUMN leased boolean NOT NULL DEFAULT false`
  yield* sql`CREATE INDEX receipts_account_events ON receipts (account_id, xid, event_seq) WHERE event_seq IS NOT NULL`
  yield* sql`
    CREATE FUNCTION settlement_events(r receipts)
    RETURNS TABLE (id text, type text, category text, data jsonb, created_at timestamptz, seq bigint)
    LANGUAGE sql STABLE AS $$
      SELECT 'evt_' || substr(r.id, strpos(r.id, '_') + 1) || e.suffix, e.type, split_part(e.type, '.', 1), e.data, e.created_at,
             r.event_seq + e.k
      FROM (VALUES
        (0, 'r', 'payment.reserved', jsonb_build_object('amount_usd', r.estimated_usd::text), least(r.reserved_at, r.settled_at)),
        (1, 's', 'payment.settled', jsonb_build_object(
           'total_usd', r.total_usd::text,
           'released_usd', greatest(r.estimated_usd - r.total_usd, 0)::numeric(38, 9)::text), r.settled_at),
        (2, 'c', 'receipt.created', jsonb_build_object('model', r.model, 'total_usd', r.total_usd::text), r.settled_at)
      ) AS e (k, suffix, type, data, created_at)
      WHERE r.event_seq IS NOT NULL AND (e.k > 0 OR r.leased)
    $$`
  yield* sql`
    CREATE VIEW event_log AS
    SELECT id, type, account_id, request_id, receipt_id, data, created_at, xid, seq, category FROM events
    UNION ALL
    SELECT e.id, e.type, r.account_id, r.request_id, r.id, e.data, e.created_at, r.xid, e.seq, e.category
    FROM receipts r CROSS JOIN LATERAL settlement_events(r) e`
})
