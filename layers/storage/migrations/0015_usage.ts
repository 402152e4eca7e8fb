/**
 * Usage reads receipts: the key that made each call, and the same read order
 * as the event log (the writing transaction's id; layers/events/eventPages.ts),
 * so a dashboard paging or polling receipts misses none that commits late.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE receipts ADD COLUMN key_id text`
  yield* sql`ALTER TABLE receipts ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id()`
  yield* sql`CREATE INDEX receipts_account_order ON receipts (account_id, xid, id)`
})
