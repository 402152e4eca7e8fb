/**
 * The event log's read order: the writing transaction's id, then a sequence
 * within it. An event is listed only once every transaction older than the
 * reader's snapshot horizon has ended, so none can appear later below a page
 * already read (layers/events/eventPages.ts). `category` (the type before its
 * dot) serves the type filters from an index (an exact type is one of a few in
 * its category). The index by creation time goes: a time range is a filter
 * on this order, not an order of its own.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id()`
  yield* sql`ALTER TABLE events ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY`
  yield* sql`ALTER TABLE events ADD COLUMN category text GENERATED ALWAYS AS (split_part(type, '.', 1)) STORED`
  yield* sql`CREATE INDEX events_account_order ON events (account_id, xid, seq)`
  yield* sql`CREATE INDEX events_account_category ON events (account_id, category, xid, seq)`
  yield* sql`DROP INDEX events_account`
  yield* sql`CREATE INDEX events_receipt ON events (receipt_id, xid, seq) WHERE receipt_id IS NOT NULL`
})
