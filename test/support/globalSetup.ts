/** Builds the migrated embedded-database template once per test run (a cold PGlite start takes seconds). */
import { rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { Effect, Layer } from "effect"
import { DatabaseLive } from "../../layers/Database.ts"
import { MigrationsLive } from "../../layers/Migrations.ts"
import { AppConfig } from "../../services/Config.ts"
import { loadConfig } from "../../layers/ConfigLive.ts"
import { PGLITE_TEMPLATE } from "./database.ts"

export default async function setup() {
  if (process.env.DATABASE_URL) return
  rmSync(PGLITE_TEMPLATE, { recursive: true, force: true })
  const config = await Effect.runPromise(loadConfig({ SVC_DATA_DIR: PGLITE_TEMPLATE }, tmpdir()))
  const migrated = MigrationsLive.pipe(Layer.provide(DatabaseLive), Layer.provide(Layer.succeed(AppConfig, config)))
  await Effect.runPromise(Effect.scoped(Layer.build(migrated)))
}
