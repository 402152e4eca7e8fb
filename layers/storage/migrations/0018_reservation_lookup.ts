/**
 * Reservations are found by id only. The index by account served no
 * statement, yet the settlement's plan, prepared while the table was small,
 * read it (with the open reservations' index) for every account's whole
 * history of reservations instead of looking the ids up by primary key
 * (docs/performance.md); every reservation also wrote an entry into it.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX reservations_account`
})
