/**
 * Statements prepared once per connection (layers/storage/preparingClient.ts), on the
 * database the suite runs on: a repeated statement is parsed once; a table
 * change under a prepared `SELECT *` fails that statement at most once, and
 * the next call prepares it afresh.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Scope } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { pglitePoolOptions } from "../layers/storage/pgliteConnection.ts"
import { openPgliteWorker } from "../layers/storage/pgliteWorker.ts"
import { PreparingClient } from "../layers/storage/preparingClient.ts"

const serverUrl = process.env.DATABASE_URL || undefined
let pool: pg.Pool
/** One client held throughout, as the app's SqlClient uses them (`pool.query` ends a client on any error). */
let client: pg.PoolClient
/** The embedded database's worker, open for the file. */
const embedded = Effect.runSync(Scope.make())
let dir: string | undefined
const table = `prep_${randomBytes(4).toString("hex")}`

beforeAll(async () => {
  if (serverUrl !== undefined) {
    pool = new pg.Pool({ connectionString: serverUrl, max: 1, Client: PreparingClient } as pg.PoolConfig)
  } else {
    dir = mkdtempSync(join(tmpdir(), "svc-test-prep-"))
    const exchange = await Effect.runPromise(Scope.extend(Effect.map(openPgliteWorker(dir), (open) => open.exchange), embedded))
    pool = new pg.Pool(pglitePoolOptions(exchange, PreparingClient))
  }
  client = await pool.connect()
  await client.query(`CREATE TABLE ${table} (a int)`)
  await client.query(`INSERT INTO ${table} VALUES (1), (2)`)
})
afterAll(async () => {
  await client?.query(`DROP TABLE IF EXISTS ${table}`)
  client?.release()
  await pool?.end()
  await Effect.runPromise(Scope.close(embedded, Exit.void))
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

const prepared = async () =>
  (await client.query<{ name: string; statement: string }>("SELECT name, statement FROM pg_prepared_statements")).rows

describe("PreparingClient", () => {
  it("prepares a parameterized statement once and reuses it", async () => {
    const text = `SELECT a FROM ${table} WHERE a = $1`
    for (let i = 0; i < 5; i++) expect((await client.query(text, [1])).rows).toEqual([{ a: 1 }])
    const mine = (await prepared()).filter((row) => row.statement === text)
    expect(mine).toHaveLength(1)
    expect(mine[0]!.name).toMatch(/^svc_/)
    // Without parameters nothing is named.
    await client.query(`SELECT count(*) FROM ${table}`)
    expect((await prepared()).some((row) => row.statement.startsWith("SELECT count(*)"))).toBe(false)
  })

  it("recovers when a table change makes a prepared SELECT * stale", async () => {
    const text = `SELECT * FROM ${table} WHERE a = $1`
    expect((await client.query(text, [2])).rows).toEqual([{ a: 2 }])
    await client.query(`ALTER TABLE ${table} ADD COLUMN b int DEFAULT 7`)
    const outcomes: Array<unknown> = []
    for (let i = 0; i < 3; i++) {
      outcomes.push(await client.query(text, [2]).then((result) => result.rows, (error: Error) => error.message))
    }
    // At most the first call sees the stale statement; from then on the new shape is served.
    expect(outcomes.at(-1)).toEqual([{ a: 2, b: 7 }])
    expect(outcomes.filter((outcome) => typeof outcome === "string").length).toBeLessThanOrEqual(1)
  })

  it("does the same for a statement with a callback, as the pool's `query` runs the ledger's", async () => {
    const withCallback = (text: string, values: Array<unknown>) =>
      new Promise<unknown>((resolve) =>
        client.query(text, values, (error: Error | undefined, result: pg.QueryResult) =>
          resolve(error ? error.message : result.rows)))
    const text = `SELECT *, $1::int AS n FROM ${table} WHERE a = 1`
    for (let i = 0; i < 3; i++) expect(await withCallback(text, [i])).toEqual([{ a: 1, b: 7, n: i }])
    const mine = (await prepared()).filter((row) => row.statement === text)
    expect(mine).toHaveLength(1)
    expect(mine[0]!.name).toMatch(/^svc_/)
    await client.query(`ALTER TABLE ${table} ADD COLUMN c int DEFAULT 8`)
    const outcomes: Array<unknown> = []
    for (let i = 0; i < 3; i++) outcomes.push(await withCallback(text, [5]))
    expect(outcomes.at(-1)).toEqual([{ a: 1, b: 7, c: 8, n: 5 }])
    expect(outcomes.filter((outcome) => typeof outcome === "string").length).toBeLessThanOrEqual(1)
  })
})
