/**
 * The `pg` pool under the app's SqlClient, for the ledger's two hot
 * statements (a call's reservation and its settlement). Run on the pool
 * directly, a statement skips what @effect/sql adds to each one — a span
 * (made even with traces off), a scope with its copy of the service
 * context, the statement compiler — about 50–70 µs of CPU a statement here
 * (docs/performance.md). Same pool, same prepared statements, same errors
 * (`SqlError`), so outages are told apart as for every other statement.
 */
import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect } from "effect"
import type pg from "pg"

export class PgPool extends Context.Tag("svc/PgPool")<PgPool, pg.Pool>() {}

/** Runs one statement (`$1`… placeholders) and answers its rows. */
export type StatementRunner = <Row extends object>(
  text: string,
  values: ReadonlyArray<unknown>
) => Effect.Effect<ReadonlyArray<Row>, SqlError>

/** Statements on the pool, each on a connection of its own (autocommit). */
export const poolStatements = (pool: pg.Pool): StatementRunner => (text, values) =>
  Effect.async((resume) => {
    pool.query(text, values as Array<unknown>, (error, result) =>
      resume(
        error
          ? Effect.fail(new SqlError({ cause: error, message: "Failed to execute statement" }))
          : Effect.succeed(result.rows)
      ))
  })
