/**
 * The operator CLI. Its commands run in this process against one gateway's
 * services on a fresh database (PostgreSQL when `DATABASE_URL` is set, else a
 * copy of the embedded template), with stdout and stderr captured; two real
 * child processes show the same as an operator sees it: a JSON record and
 * exit 0, or one line on stderr and exit 1.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { Console, Effect, Exit, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Core } from "../layers/Core.ts"
import { loadConfig } from "../layers/platform/ConfigLive.ts"
import { AppConfig } from "../services/Config.ts"
import { type OperatorServices, runCli } from "../src/cli/commands.ts"
import { freshDatabase, type TestDatabase } from "./support/database.ts"

const cwd = join(import.meta.dirname, "..")
let dir = ""
let database: TestDatabase | undefined
let env: Record<string, string> = {}
let runtime: ManagedRuntime.ManagedRuntime<Layer.Layer.Success<OperatorServices>, unknown> | undefined

/** The app's services on a config read from `env` (as the CLI process reads its own). */
const servicesFor = (environment: Record<string, string>): OperatorServices =>
  Core.pipe(Layer.provide(Layer.effect(AppConfig, loadConfig(environment, dir))))

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "svc-cli-"))
  // An explicit empty config file, so a developer's ./svc.config.json cannot leak in.
  writeFileSync(join(dir, "config.json"), "{}")
  database = await freshDatabase()
  env = { SVC_CONFIG: join(dir, "config.json"), ...database.env }
  runtime = ManagedRuntime.make(servicesFor(env).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))))
  await runtime.runtime()
})

afterAll(async () => {
  await runtime?.dispose()
  await database?.drop()
  rmSync(dir, { recursive: true, force: true })
})

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs a command line in this process against the shared services (or `services`), capturing its output. */
const svc = async (args: ReadonlyArray<string>, services?: OperatorServices): Promise<Run> => {
  let stdout = ""
  let stderr = ""
  const console = Effect.runSync(Console.consoleWith(Effect.succeed))
  const capturing: Console.Console = {
    ...console,
    log: (...text) => Effect.sync(() => void (stdout += `${text.join(" ")}\n`)),
    error: (...text) => Effect.sync(() => void (stderr += `${text.join(" ")}\n`))
  }
  const shared = Layer.succeedContext(await runtime!.runtime().then((built) => built.context))
  const exit = await Effect.runPromiseExit(
    runCli(services ?? shared)(["node", "svc", ...args]).pipe(
      Effect.withConsole(capturing),
      Effect.provide(NodeContext.layer),
      Logger.withMinimumLogLevel(LogLevel.Warning)
    )
  )
  return { code: Exit.isSuccess(exit) ? 0 : 1, stdout, stderr }
}

/** A successful command: exit 0, nothing on stderr, one JSON record on stdout. */
const ok = async (...args: Array<string>) => {
  const run = await svc(args)
  expect(run.stderr).toBe("")
  expect(run.code).toBe(0)
  return JSON.parse(run.stdout)
}

/** A failed command: exit 1, nothing on stdout, exactly one line on stderr. */
const fails = async (args: ReadonlyArray<string>, services?: OperatorServices) => {
  const run = await svc(args, services)
  expect(run.stdout).toBe("")
  expect(run.code).toBe(1)
  expect(run.stderr).toMatch(/^svc: [^\n]+\n$/)
  return run.stderr.trimEnd()
}

const slow = 60_000

describe("svc CLI", () => {
  let account = ""

  it("creates an account with credit and shows it", async () => {
    const created = await ok("accounts", "create", "--name", "Acme", "--credit", "12.345678901")
    expect(created).toMatchObject({ object: "account", name: "Acme", balance_usd: "12.345678901" })
    account = created.id
    expect(await ok("accounts", "show", account)).toEqual(created)
  }, slow)

  it("creates a key with scopes, shown once with its secret, and revokes it", async () => {
    const scopes = ["--scope", "chat", "--scope", "monitoring"]
    const key = await ok("keys", "create", account, ...scopes, "--name", "ci", "--rpm", "60")
    expect(key).toMatchObject({
      object: "api_key",
      account_id: account,
      name: "ci",
      scopes: ["chat", "monitoring"],
      rpm: 60,
      tpm: null,
      revoked_at: null
    })
    expect(key.key.startsWith(key.hint)).toBe(true)
    const revoked = await ok("keys", "revoke", key.id)
    expect(revoked).toMatchObject({ id: key.id, scopes: ["chat", "monitoring"] })
    expect(revoked.revoked_at).toEqual(expect.any(String))
    expect(revoked).not.toHaveProperty("key")
  }, slow)

  it("changes a key's rate limits and an account's concurrency cap, clearing one with none; a bad limit names its flag", async () => {
    const key = await ok("keys", "create", account, "--scope", "chat", "--rpm", "60")
    expect(await ok("keys", "limits", key.id, "--tpm", "40000")).toMatchObject({ id: key.id, rpm: 60, tpm: 40000 })
    expect(await ok("keys", "limits", key.id, "--rpm", "none")).toMatchObject({ rpm: null, tpm: 40000 })
    const [negative, huge, word] = await Promise.all([
      fails(["keys", "limits", key.id, "--rpm", "-1"]),
      fails(["keys", "limits", key.id, "--tpm", "2147483648"]),
      fails(["keys", "limits", key.id, "--tpm", "lots"])
    ])
    expect(negative).toMatch(/^svc: invalid_request: --rpm: /)
    expect(huge).toMatch(/^svc: invalid_request: --tpm: /)
    expect(word).toMatch(/^svc: invalid_request: --tpm: /)
    expect(await fails(["keys", "limits", "key_missing", "--rpm", "5"])).toBe("svc: not_found: No API key key_missing.")
    expect(await ok("accounts", "limits", account, "--concurrency", "4")).toEqual({
      object: "account_limits",
      account_id: account,
      concurrency: 4
    })
    expect(await ok("accounts", "limits", account, "--concurrency", "none")).toMatchObject({ concurrency: null })
    expect(await fails(["accounts", "limits", account, "--concurrency", "0"])).toMatch(/^svc: invalid_request: --concurrency: /)
  }, slow)

  it("adds credits once per reference", async () => {
    const first = await ok("credits", "add", account, "--amount", "0.1", "--reference", "inv-1")
    expect(first).toMatchObject({ kind: "credit", amount_usd: "0.100000000", balance_after_usd: "12.445678901" })
    expect(await ok("credits", "add", account, "--amount", "0.1", "--reference", "inv-1")).toEqual(first)
    expect(await ok("accounts", "show", account)).toMatchObject({ balance_usd: "12.445678901" })
    expect(await fails(["credits", "add", account, "--amount", "0.2", "--reference", "inv-1"])).toMatch(
      /^svc: idempotency_conflict: /
    )
  }, slow)

  it("rotates the prompt-sealing key, printing the new public key", async () => {
    const first = await ok("prompt-keys", "rotate")
    const second = await ok("prompt-keys", "rotate")
    expect(first).toMatchObject({ kty: "EC", crv: "P-256", alg: "ECDH-ES", use: "enc" })
    expect(first).not.toHaveProperty("d")
    expect(second.kid).not.toBe(first.kid)
  }, slow)

  it("reports an unknown id in one line", async () => {
    expect(await fails(["accounts", "show", "acct_x"])).toBe("svc: not_found: No account acct_x.")
  }, slow)

  it("rejects invalid input, a bad config and bad usage", async () => {
    const [negative, scope, config, usage] = await Promise.all([
      fails(["credits", "add", account, "--amount", "-5", "--reference", "inv-2"]),
      fails(["keys", "create", account, "--scope", "root"]),
      fails(["accounts", "show", account], servicesFor({ ...env, SVC_CONFIG: join(dir, "missing.json") })),
      svc(["accounts", "create"])
    ])
    expect(negative).toBe("svc: invalid_request: --amount: must be greater than zero")
    expect(scope).toMatch(/^svc: invalid_request: --scope: Expected "chat", actual "root"; .*"monitoring"/)
    expect(config).toMatch(/^svc: invalid configuration: SVC_CONFIG: no file at /)
    expect(usage.code).not.toBe(0)
    expect(usage.stdout).toBe("")
  }, slow)
})

describe("svc CLI as a process", () => {
  let own: TestDatabase | undefined
  let processEnv: NodeJS.ProcessEnv = {}

  beforeAll(async () => {
    // Its own database: the embedded one admits one process at a time, and the tests above hold theirs.
    own = await freshDatabase()
    const { DATABASE_URL: _, PORT: __, ...inherited } = process.env
    processEnv = { ...inherited, SVC_CONFIG: join(dir, "config.json"), ...own.env }
  })
  afterAll(() => own?.drop())

  const spawned = (args: ReadonlyArray<string>) =>
    new Promise<Run>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", "src/cli.ts", ...args], { cwd, env: processEnv })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (chunk) => (stdout += chunk))
      child.stderr.on("data", (chunk) => (stderr += chunk))
      child.on("error", reject)
      child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }))
    })

  it("prints the record and exits 0, or prints one line on stderr and exits 1", async () => {
    const created = await spawned(["accounts", "create", "--name", "Process", "--credit", "1"])
    expect(created).toMatchObject({ code: 0, stderr: "" })
    expect(JSON.parse(created.stdout)).toMatchObject({ object: "account", name: "Process", balance_usd: "1.000000000" })
    expect(await spawned(["accounts", "show", "acct_x"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "svc: not_found: No account acct_x.\n"
    })
  }, slow)
})
