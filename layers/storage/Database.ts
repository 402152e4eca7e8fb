/**
 * The one SqlClient of the app: real PostgreSQL when `DATABASE_URL` is set,
 * otherwise embedded PGlite in the data directory, run in a worker thread
 * (pgliteWorker.ts). Both go through the same `pg` driver, so queries and
 * type parsing are identical, and both prepare each statement once per
 * connection (layers/storage/preparingClient.ts). The driver's pool is a
 * service too (`PgPool`), for the ledger's hot statements.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Data, Effect, Layer, Redacted } from "effect"
import pg from "pg"
import { AppConfig, type DatabaseSettings } from "../../services/Config.ts"
import { isDatabaseOutage } from "../../services/DatabaseStatus.ts"
import { pglitePoolOptions } from "./pgliteConnection.ts"
import { PgPool } from "./pgPool.ts"
import { openPgliteWorker, type ProtocolExchange } from "./pgliteWorker.ts"
import { PreparingClient } from "./preparingClient.ts"
import { poolTypes } from "./timestampParsing.ts"

/** The app's SqlClient on `pool`, and the pool itself for the ledger's hot statements (pgPool.ts). */
const sqlOnPool = (pool: pg.Pool) =>
  Layer.merge(PgClient.layerFromPool({ acquire: Effect.succeed(pool) }), Layer.succeed(PgPool, pool))

/** A pool on embedded PGlite, open in its worker (owned by the caller). PGlite takes one connection only. */
const pglitePool = (exchange: ProtocolExchange) =>
  Effect.acquireRelease(
    Effect.sync(() => new pg.Pool({ ...pglitePoolOptions(exchange, PreparingClient), types: poolTypes })),
    (pool) => Effect.promise(() => pool.end())
  )

/** A start that cannot go on: the database refused us (a config mistake), or stayed unreachable too long. */
export class DatabaseNotReady extends Data.TaggedError("DatabaseNotReady")<{ readonly reason: string }> {
  get message() {
    return `cannot use the database at DATABASE_URL: ${this.reason}`
  }
}

/** The driver's own words for a failed connection, on one line. */
const firstLine = (error: unknown) =>
  String(error instanceof AggregateError && error.errors[0] instanceof Error ? error.errors[0].message : (error as Error)?.message ?? error)
    .split("\n")[0]!.slice(0, 200)

/**
 * Waits for the server to answer, one log line per retry (backing off to 5 s), up to
 * `startupWaitSeconds` (0: forever). A refusal that is not an outage (wrong password, unknown
 * database or host) is a config mistake and stops the start at once.
 */
const awaitServer = (pool: pg.Pool, settings: DatabaseSettings) => {
  const started = performance.now()
  const attempt = (n: number): Effect.Effect<void, DatabaseNotReady> =>
    Effect.tryPromise({
      try: () => pool.query("SELECT 1"),
      catch: (cause) => new SqlError({ cause, message: "Could not connect to the database at DATABASE_URL" })
    }).pipe(
      Effect.asVoid,
      Effect.catchAll((error) => {
        const reason = firstLine(error.cause)
        if (!isDatabaseOutage(Cause.fail(error))) return Effect.fail(new DatabaseNotReady({ reason }))
        const waited = (performance.now() - started) / 1000
        const limit = settings.startupWaitSeconds
        if (limit > 0 && waited >= limit) {
          return Effect.fail(new DatabaseNotReady({ reason: `${reason}; still unreachable after ${Math.round(waited)} s` }))
        }
        const delayMs = Math.min(5000, 500 * 2 ** Math.min(n, 4))
        return Effect.logWarning(`database not reachable (${reason}); retry ${n + 1} in ${delayMs / 1000} s`).pipe(
          Effect.zipRight(Effect.sleep(`${delayMs} millis`)),
          Effect.zipRight(attempt(n + 1))
        )
      })
    )
  return attempt(0)
}

/** A pool on a PostgreSQL server with bounded waits, once the server answers (see `awaitServer`). */
const serverPool = (url: Redacted.Redacted<string>, settings: DatabaseSettings) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const pool = new pg.Pool({
        connectionString: Redacted.value(url),
        application_name: "svc",
        Client: PreparingClient,
        types: poolTypes,
        max: settings.poolSize,
        connectionTimeoutMillis: settings.connectTimeoutMs,
        idleTimeoutMillis: settings.idleTimeoutMs,
        // The server cancels a long statement; the driver gives up on a silent server a second later.
        statement_timeout: settings.statementTimeoutMs,
        query_timeout: settings.statementTimeoutMs + 1000,
        keepAlive: true
      } as pg.PoolConfig)
      pool.on("error", () => {})
      return awaitServer(pool, settings).pipe(
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

/** Whether a process with this id runs (EPERM: it does, as another user). */
export const isAlive = (pid: number) => {
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

/** Opens (or creates) the embedded database in `dataDir`, in a worker thread, for as long as the scope lives. */
export const openPglite = (dataDir: string) =>
  Effect.zipRight(lockDataDir(dataDir), Effect.map(openPgliteWorker(dataDir), (open) => open.exchange))

export const DatabaseLive = Layer.unwrapScoped(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (config.databaseUrl !== undefined) {
      // Waited for here, outside the SqlClient layer, so a start that gives up fails with its own line.
      yield* Effect.logInfo("connecting to the PostgreSQL database at DATABASE_URL")
      return sqlOnPool(yield* serverPool(config.databaseUrl, config.file.database))
    }
    yield* Effect.logInfo(`opening the embedded database in ${config.dataDir} (the first start creates it; a few seconds)`)
    return sqlOnPool(yield* pglitePool(yield* openPglite(config.dataDir)))
  })
)
