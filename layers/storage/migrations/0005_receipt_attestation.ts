/** A confidential call's receipt names the attestation verdict(s) it was served under. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE receipts ADD COLUMN attestation_verdicts jsonb`
})
