/** A call of several billable steps (an agent run) lists them on its receipt. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE receipts ADD COLUMN line_items jsonb`
})
