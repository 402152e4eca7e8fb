/**
 * An interrupted statement is not cancelled on the server (PostgreSQL server
 * runs only): @effect/sql-pg would send `pg_cancel_backend` and hand the
 * connection back at once, and a late signal can cancel the next statement on
 * it, someone else's (layers/storage/preparingClient.ts). So the abandoned
 * statement runs to its end, and the next statement on the connection
 * succeeds.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Fiber } from "effect"
import pg from "pg"
import { describe, expect, it } from "vitest"
import { PreparingClient } from "../layers/storage/preparingClient.ts"

const serverUrl = process.env.DATABASE_URL || undefined

describe.skipIf(serverUrl === undefined)("an interrupted statement (PostgreSQL server runs only)", () => {
  it("runs to its end instead of being cancelled, and the connection's next statement succeeds", async () => {
    const table = `cancel_${randomBytes(4).toString("hex")}`
    const sqlLayer = PgClient.layerFromPool({
      acquire: Effect.acquireRelease(
        Effect.sync(() => new pg.Pool({ connectionString: serverUrl, max: 2, Client: PreparingClient } as pg.PoolConfig)),
        (pool) => Effect.promise(() => pool.end())
      )
    })
    const rows = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`CREATE TABLE ${table} (a int)`)
      const slow = yield* Effect.fork(sql.unsafe(`INSERT INTO ${table} SELECT 1 FROM pg_sleep(0.4)`))
      yield* Effect.sleep("100 millis")
      yield* Fiber.interrupt(slow)
      expect(yield* sql.unsafe("SELECT 2 AS two")).toEqual([{ two: 2 }])
      yield* Effect.sleep("600 millis")
      const written = yield* sql.unsafe<{ a: number }>(`SELECT a FROM ${table}`)
      yield* sql.unsafe(`DROP TABLE ${table}`)
      return written
    })).pipe(Effect.provide(sqlLayer)))
    expect(rows).toEqual([{ a: 1 }])
  })
})
