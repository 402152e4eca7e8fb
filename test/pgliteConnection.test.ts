/**
 * The driver's connection to embedded PGlite in its worker (layers/storage/
 * pgliteConnection.ts, pgliteWorker.ts): one statement's messages run as one buffer, answers come back in order, a
 * failed statement leaves the session usable, and a client that leaves ends
 * its session as a server would (its transaction rolled back, its prepared
 * statements gone), so the pool's next client starts clean. The worker
 * that holds PGlite fails its start with PGlite's reason and refuses
 * exchanges once it is gone.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Scope } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { pglitePoolOptions } from "../layers/storage/pgliteConnection.ts"
import { openPgliteWorker } from "../layers/storage/pgliteWorker.ts"
import { PreparingClient } from "../layers/storage/preparingClient.ts"

const embedded = Effect.runSync(Scope.make())
let pool: pg.Pool
const dir = mkdtempSync(join(tmpdir(), "svc-test-pglite-conn-"))

beforeAll(async () => {
  const exchange = await Effect.runPromise(Scope.extend(Effect.map(openPgliteWorker(dir), (open) => open.exchange), embedded))
  pool = new pg.Pool(pglitePoolOptions(exchange, PreparingClient))
  await pool.query("CREATE TABLE items (id int PRIMARY KEY, note text)")
})
afterAll(async () => {
  await pool.end()
  await Effect.runPromise(Scope.close(embedded, Exit.void))
  rmSync(dir, { recursive: true, force: true })
})

describe("the PGlite connection", () => {
  it("answers many statements in flight each with its own rows", async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => pool.query<{ n: number }>("SELECT $1::int * 2 AS n", [i]))
    )
    expect(answers.map((answer) => answer.rows[0]!.n)).toEqual(Array.from({ length: 50 }, (_, i) => i * 2))
  })

  it("keeps serving after a statement fails, on the same client and on the next", async () => {
    const client = await pool.connect()
    await client.query("INSERT INTO items VALUES ($1, $2)", [1, "one"])
    await expect(client.query("INSERT INTO items VALUES ($1, $2)", [1, "again"])).rejects.toThrow(/duplicate key/)
    await expect(client.query("SELECT $1::int", ["not a number"])).rejects.toThrow(/invalid input syntax/)
    expect((await client.query("SELECT note FROM items WHERE id = $1", [1])).rows).toEqual([{ note: "one" }])
    client.release()
    // `pool.query` ends its client on an error: the next client must not hear of the old one's end.
    await expect(pool.query("SELECT $1::int", ["x"])).rejects.toThrow(/invalid input syntax/)
    expect((await pool.query("SELECT note FROM items WHERE id = $1", [1])).rows).toEqual([{ note: "one" }])
  })

  it("rolls back the transaction of a client that left, and forgets its prepared statements", async () => {
    const client = await pool.connect()
    await client.query("BEGIN")
    await client.query("INSERT INTO items VALUES ($1, $2)", [2, "uncommitted"])
    client.release(true)
    const next = await pool.connect()
    expect((await next.query("SELECT count(*)::int AS n FROM items WHERE id = $1", [2])).rows).toEqual([{ n: 0 }])
    const statements = await next.query<{ name: string }>("SELECT name FROM pg_prepared_statements")
    // Only what this client prepared itself (the count above) is there.
    expect(statements.rows).toHaveLength(1)
    next.release()
  })

  it("fails the start, with PGlite's reason, when the data directory cannot be opened", async () => {
    const notADirectory = join(dir, "a-file")
    writeFileSync(notADirectory, "not a database")
    const exit = await Effect.runPromiseExit(Effect.scoped(openPgliteWorker(notADirectory)))
    expect(exit._tag).toBe("Failure")
    expect(String(Exit.isFailure(exit) && exit.cause)).toMatch(/cannot open the embedded database/)
  })

  it("refuses exchanges at once when its worker has stopped, instead of leaving them waiting", async () => {
    const other = mkdtempSync(join(tmpdir(), "svc-test-pglite-stop-"))
    const scope = Effect.runSync(Scope.make())
    const open = await Effect.runPromise(Scope.extend(openPgliteWorker(other), scope))
    await open.worker.terminate()
    await expect(open.exchange(new Uint8Array([81, 0, 0, 0, 13, 83, 69, 76, 69, 67, 84, 32, 49, 0]))).rejects.toThrow(/stopped/)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(other, { recursive: true, force: true })
  })

  it("lets a client leave quietly once its worker has stopped: the pool ends, and no stray error is raised", async () => {
    const other = mkdtempSync(join(tmpdir(), "svc-test-pglite-leave-"))
    const scope = Effect.runSync(Scope.make())
    const open = await Effect.runPromise(Scope.extend(openPgliteWorker(other), scope))
    const stray: Array<unknown> = []
    const onStray = (error: unknown) => void stray.push(error)
    process.on("unhandledRejection", onStray)
    try {
      const leaving = new pg.Pool(pglitePoolOptions(open.exchange, PreparingClient))
      await leaving.query("SELECT 1") // its client stays idle in the pool
      await open.worker.terminate()
      await leaving.end()
      await new Promise((resolve) => setTimeout(resolve, 50))
    } finally {
      process.off("unhandledRejection", onStray)
    }
    expect(stray).toEqual([])
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(other, { recursive: true, force: true })
  })
})
