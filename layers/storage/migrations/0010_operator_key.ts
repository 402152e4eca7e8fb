/**
 * The operator key a first start generates when `SVC_ADMIN_KEY` is not set:
 * one row at most (the fixed `id` makes the first start's insert race-safe
 * across processes), only the SHA-256 of the key stored.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE operator_key (
      id text PRIMARY KEY CHECK (id = 'operator'),
      hint text NOT NULL,
      secret_sha256 bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
})
