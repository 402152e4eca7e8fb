/**
 * Indexes in the operator's list order (services/Pagination.ts): accounts and
 * an account's keys newest first, ties broken by id in byte order ("C"), so a
 * keyset page is one index range however deep it lies.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX accounts_newest ON accounts (created_at, id COLLATE "C")`
  yield* sql`DROP INDEX api_keys_account`
  yield* sql`CREATE INDEX api_keys_account ON api_keys (account_id, created_at, id COLLATE "C")`
})
