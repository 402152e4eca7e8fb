/**
 * Once per test run: builds dist/ (the server and CLI that process tests
 * spawn, as `npm start` runs them), and the migrated embedded-database
 * template (a cold PGlite start takes seconds), in a directory of its own so
 * that concurrent runs do not share it; test workers inherit its path through
 * the environment.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { DatabaseLive } from "../../layers/storage/Database.ts"
import { MigrationsLive } from "../../layers/storage/Migrations.ts"
import { AppConfig } from "../../services/Config.ts"
import { loadConfig } from "../../layers/platform/ConfigLive.ts"
import { TEMPLATE_ENV } from "./database.ts"

export default async function setup() {
  execFileSync(process.execPath, ["scripts/build.mjs"], { stdio: "inherit" })
  if (process.env.DATABASE_URL) return
  const template = mkdtempSync(join(tmpdir(), "svc-test-template-"))
  process.env[TEMPLATE_ENV] = template
  const config = await Effect.runPromise(loadConfig({ SVC_DATA_DIR: template }, tmpdir()))
  const migrated = MigrationsLive.pipe(Layer.provide(DatabaseLive), Layer.provide(Layer.succeed(AppConfig, config)))
  await Effect.runPromise(Effect.scoped(Layer.build(migrated)))
  return () => rmSync(template, { recursive: true, force: true })
}
