/**
 * The one SqlClient of the app: real PostgreSQL when `DATABASE_URL` is set,
 * otherwise embedded PGlite in the data directory. Both go through the same
 * `pg` driver, so queries and type parsing are identical.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import { createPgConfig } from "@electric-sql/pglite/node-postgres"
import { Data, Effect, Layer } from "effect"
import pg from "pg"
import { AppConfig } from "../services/Config.ts"

/** A SqlClient over an open PGlite instance (owned by the caller). PGlite takes one connection only. */
export const pgliteSqlClient = (pglite: PGlite) =>
  PgClient.layerFromPool({
    acquire: Effect.acquireRelease(
      Effect.sync(() => new pg.Pool({ ...createPgConfig(pglite), max: 1 } as pg.PoolConfig)),
      (pool) => Effect.promise(() => pool.end())
    )
  })

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
    if (config.databaseUrl !== undefined) {
      return PgClient.layer({ url: config.databaseUrl, applicationName: "svc" })
    }
    yield* Effect.logInfo(`embedded database in ${config.dataDir}`)
    return pgliteSqlClient(yield* openPglite(config.dataDir))
  })
)
