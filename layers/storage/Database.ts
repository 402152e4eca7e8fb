/**
 * The one SqlClient of the app: real PostgreSQL when `DATABASE_URL` is set,
 * otherwise embedded PGlite in the data directory. Both go through the same
 * `pg` driver, so queries and type parsing are identical, and both prepare
 * each statement once per connection (layers/storage/preparingClient.ts).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import { createPgConfig } from "@electric-sql/pglite/node-postgres"
import { SqlError } from "@effect/sql/SqlError"
import { Data, Effect, Layer, Redacted } from "effect"
import pg from "pg"
import { AppConfig } from "../../services/Config.ts"
import { PreparingClient } from "./preparingClient.ts"

/** A SqlClient over an open PGlite instance (owned by the caller). PGlite takes one connection only. */
export const pgliteSqlClient = (pglite: PGlite) =>
  PgClient.layerFromPool({
    acquire: Effect.acquireRelease(
      Effect.sync(() => new pg.Pool({ ...createPgConfig(pglite), max: 1, Client: PreparingClient } as pg.PoolConfig)),
      (pool) => Effect.promise(() => pool.end())
    )
  })

/** A pool on a PostgreSQL server, checked with one query (as `PgClient.layer` does) before anything uses it. */
const serverPool = (url: Redacted.Redacted<string>) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const pool = new pg.Pool({ connectionString: Redacted.value(url), application_name: "svc", Client: PreparingClient })
      pool.on("error", () => {})
      return Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError({ cause, message: "Could not connect to the database at DATABASE_URL" })
      }).pipe(
        Effect.timeoutFail({
          duration: "5 seconds",
          onTimeout: () => new SqlError({ cause: new Error("timed out"), message: "Could not connect to the database at DATABASE_URL" })
        }),
        Effect.tapError(() => Effect.promise(() => pool.end())),
        Effect.as(pool)
      )
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption(1000))
  )

/** The embedded database is used by `dataDir`'s owner process: another one would corrupt it. */
export class DataDirInUse extends Data.TaggedError("DataDirInUse")<{ readonly dataDir: string; readonly pid: number }> {
  get message() {
    return `the embedded database in ${this.dataDir} is in use by process ${this.pid}; stop it, or share a PostgreSQL server through DATABASE_URL`
  }
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Takes the data directory's owner file, replacing one left by a dead process. */
const lockDataDir = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      mkdirSync(dataDir, { recursive: true })
      const lockFile = join(dataDir, "svc.pid")
      const owner = existsSync(lockFile) ? Number(readFileSync(lockFile, "utf8")) : NaN
      if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner)) {
        return Effect.fail(new DataDirInUse({ dataDir, pid: owner }))
      }
      writeFileSync(lockFile, String(process.pid))
      return Effect.succeed(lockFile)
    }),
    (lockFile) => Effect.sync(() => rmSync(lockFile, { force: true }))
  )

/** Opens (or creates) the embedded database in `dataDir` for as long as the scope lives. */
export const openPglite = (dataDir: string) =>
  Effect.zipRight(
    lockDataDir(dataDir),
    Effect.acquireRelease(
      Effect.promise(() => PGlite.create(dataDir)),
      (pglite) => Effect.promise(() => pglite.close())
    )
  )

export const DatabaseLive = Layer.unwrapScoped(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (config.databaseUrl !== undefined) return PgClient.layerFromPool({ acquire: serverPool(config.databaseUrl) })
    yield* Effect.logInfo(`embedded database in ${config.dataDir}`)
    return pgliteSqlClient(yield* openPglite(config.dataDir))
  })
)
