/**
 * The one SqlClient of the app: real PostgreSQL when `DATABASE_URL` is set,
 * otherwise embedded PGlite in the data directory. Both go through the same
 * `pg` driver, so queries and type parsing are identical.
 */
import { mkdirSync } from "node:fs"
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import { createPgConfig } from "@electric-sql/pglite/node-postgres"
import { Effect, Layer } from "effect"
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

/** Opens (or creates) the embedded database in `dataDir` for as long as the scope lives. */
export const openPglite = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.promise(() => {
      mkdirSync(dataDir, { recursive: true })
      return PGlite.create(dataDir)
    }),
    (pglite) => Effect.promise(() => pglite.close())
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
