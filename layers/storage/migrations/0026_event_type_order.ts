/**
 * The stored events of one type in the log's order. Migration 0014 served an
 * exact type from the category's index, filtering the rest of the category
 * out: then a type was one of a few alike in its category. Since settlements'
 * events are read from receipts (0022, 0023), the stored `payment` events of
 * an account that reserves call by call are nearly all `payment.reserved`, so
 * a page of `payment.settled` read every one of them to find none. Stored
 * events are few on the hot path now (a served call stores none), so a fifth
 * index on them costs little.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX events_account_type ON events (account_id, type, xid, seq)`
})
