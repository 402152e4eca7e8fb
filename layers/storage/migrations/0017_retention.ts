/** The retention job finds old events by time: a block-range index, next to free for an append-mostly table. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX events_created ON events USING brin (created_at)`
})
