/**
 * A real gateway for acceptance tests: the whole app (the same layers `npm
 * start` runs) on a random loopback port, over a fresh database, with a known
 * bootstrap admin key. Tests talk to it over HTTP only.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { loadConfig } from "../../layers/platform/ConfigLive.ts"
import { Core } from "../../layers/Core.ts"
import { Billing } from "../../services/Billing.ts"
import { AppConfig } from "../../services/Config.ts"
import { HttpLive } from "../../src/Server.ts"
import { freshDatabase, type TestDatabase } from "./database.ts"
import { secretsOf, tapResponses } from "./responseTap.ts"

export interface TestGateway {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly adminKey: string
  /** Its database, to start another gateway on the same one. */
  readonly database: TestDatabase
  /** A JSON request; `key` defaults to the admin key. */
  readonly request: (
    method: string,
    path: string,
    options?: { readonly body?: unknown; readonly key?: string | null; readonly headers?: Record<string, string> }
  ) => Promise<{ status: number; headers: Headers; body: any; text: string }>
  /** An account with the given credit and a key with the given scopes. */
  readonly account: (options?: { credit?: string; scopes?: ReadonlyArray<string> }) => Promise<{ id: string; key: string; keyId: string }>
  /** Runs an effect on the gateway's own services (for tests of one service under the real app). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof Core>>) => Promise<A>
  /** Runs SQL against the gateway's own database. */
  readonly query: <Row = Record<string, unknown>>(text: string, params?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<Row>>
  readonly close: () => Promise<void>
}

export const startGateway = async (
  options: {
    readonly config?: unknown
    readonly env?: Record<string, string>
    /** A database to reuse (and leave in place on close); a fresh one otherwise. */
    readonly database?: TestDatabase
    /** Scan what callers receive for upstream names (on by default; the benchmark measures without it). */
    readonly scanResponses?: boolean
    /** The services (default `Core`; the benchmark compares variants). */
    readonly core?: typeof Core
    /** How it logs: by default warnings and worse only (the benchmark logs every request, as `npm start` does). */
    readonly logs?: Layer.Layer<never>
  } = {}
): Promise<TestGateway> => {
  const owned = options.database === undefined
  const database = options.database ?? await freshDatabase()
  const dir = mkdtempSync(join(tmpdir(), "svc-test-config-"))
  const configPath = join(dir, "svc.config.json")
  if (options.config !== undefined) writeFileSync(configPath, JSON.stringify(options.config))
  const adminKey = `admin_${randomBytes(16).toString("hex")}`
  const config = await Effect.runPromise(
    loadConfig(
      {
        ...database.env,
        PORT: "0",
        HOST: "127.0.0.1",
        SVC_ADMIN_KEY: adminKey,
        SVC_CONFIG: options.config === undefined ? "" : configPath,
        ...options.env
      },
      dir
    )
  )
  const runtime = ManagedRuntime.make(
    HttpLive.pipe(
      Layer.provideMerge(options.core ?? Core),
      Layer.provide(Layer.succeed(AppConfig, config)),
      Layer.provide(options.logs ?? Logger.minimumLogLevel(LogLevel.Warning))
    )
  )
  const dropOwned = () => owned ? database.drop() : Promise.resolve()
  const server = await runtime.runPromise(HttpServer.HttpServer).catch(async (error) => {
    await dropOwned()
    throw error
  })
  const { port } = server.address as HttpServer.TcpAddress
  const url = `http://127.0.0.1:${port}`
  // Everything a non-operator caller receives is scanned for upstream names when the gateway closes.
  const tap = options.scanResponses === false ? undefined : tapResponses(port, new Set([adminKey]))
  const secrets = secretsOf(options.config, options.env ?? {})

  const request: TestGateway["request"] = async (method, path, { body, headers, key = adminKey } = {}) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: {
        ...(key === null ? {} : { authorization: `Bearer ${key}` }),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...headers
      },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
    })
    const text = await response.text()
    let parsed: unknown = undefined
    try {
      parsed = JSON.parse(text)
    } catch {
      // Not JSON: tests assert on `text`.
    }
    return { status: response.status, headers: response.headers, body: parsed, text }
  }

  return {
    url,
    adminKey,
    database,
    request,
    account: async ({ credit = "10", scopes = ["chat"] } = {}) => {
      const account = await request("POST", "/v1/admin/accounts", { body: { name: "test", credit_usd: credit } })
      const key = await request("POST", `/v1/admin/accounts/${account.body.id}/keys`, { body: { scopes } })
      return { id: account.body.id, key: key.body.key, keyId: key.body.id }
    },
    run: (effect) => runtime.runPromise(effect),
    // A test's read, like a read through the API, sees every call answered before it (Billing.settled).
    query: (text, params = []) =>
      runtime.runPromise(Effect.zipRight(
        Effect.flatMap(Effect.serviceOption(Billing), (billing) => billing._tag === "Some" ? billing.value.settled : Effect.void),
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(text, params))
      )) as any,
    close: async () => {
      await runtime.dispose()
      await dropOwned()
      rmSync(dir, { recursive: true, force: true })
      tap?.stop()
      const leaks = (tap?.texts() ?? []).flatMap((text) => secrets.filter((secret) => text.includes(secret)).map((secret) => `${secret} in ${text.slice(0, 300)}`))
      if (leaks.length > 0) throw new Error(`a caller was shown upstream names:\n${leaks.join("\n")}`)
    }
  }
}
