/**
 * A settled call's routing and privacy events are kept in its receipt too:
 * a call served by its first route writes `provider.route` and
 * `privacy.class_served`, and nothing else, so its receipt carries them
 * (`call_events`, a JSON array of `{type, data}`) and the call writes no event
 * rows at all (docs/performance.md, item 59). A call with any other event
 * (a fallback, a downgraded class) stores them all, as before
 * (layers/events/receiptEvents.ts decides).
 *
 * Positions: the events' sequence now steps by 8, so a receipt's events sit at
 * `event_seq + 0..7`: `payment.reserved`, `payment.settled`,
 * `receipt.created`, then its kept call events in their order (at most five).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER SEQUENCE event_positions INCREMENT BY 8`
  yield* sql`ALTER TABLE receipts ADD COLUMN call_events jsonb`
  yield* sql`
    CREATE OR REPLACE FUNCTION settlement_events(r receipts)
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
      UNION ALL
      SELECT 'evt_' || substr(r.id, strpos(r.id, '_') + 1) || 'e' || n, c.value->>'type', split_part(c.value->>'type', '.', 1),
             c.value->'data', r.settled_at, r.event_seq + 2 + n
      FROM jsonb_array_elements(r.call_events) WITH ORDINALITY AS c (value, n)
      WHERE r.event_seq IS NOT NULL
    $$`
})
