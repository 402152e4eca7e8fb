/**
 * An `AppConfig` for tests that build services directly: the given config
 * file (as JSON) and environment, read by the real loader.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { loadConfig } from "../../layers/platform/ConfigLive.ts"
import { AppConfig } from "../../services/Config.ts"

export const testConfig = (file: unknown = {}, env: Record<string, string> = {}): Layer.Layer<AppConfig> =>
  Layer.effect(
    AppConfig,
    Effect.acquireUseRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "svc-test-config-"))),
      (dir) => {
        const path = join(dir, "svc.config.json")
        writeFileSync(path, JSON.stringify(file))
        return loadConfig({ DATABASE_URL: "", ...env, SVC_CONFIG: path }, dir)
      },
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    ).pipe(Effect.orDie)
  )
