/**
 * The operator CLI as an operator runs it: one child process per command, one
 * fresh database for the whole scenario (PostgreSQL when `DATABASE_URL` is
 * set, else a copy of the embedded template).
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "./support/database.ts"

const cwd = join(import.meta.dirname, "..")
let dir = ""
let database: TestDatabase | undefined
let env: NodeJS.ProcessEnv = {}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "svc-cli-"))
  // An explicit empty config file, so a developer's ./svc.config.json cannot leak in.
  writeFileSync(join(dir, "config.json"), "{}")
  database = await freshDatabase()
  const { DATABASE_URL: _, PORT: __, ...inherited } = process.env
  env = { ...inherited, SVC_CONFIG: join(dir, "config.json"), ...database.env }
})

afterAll(async () => {
  await database?.drop()
  rmSync(dir, { recursive: true, force: true })
})

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const svc = (args: ReadonlyArray<string>, extraEnv: NodeJS.ProcessEnv = {}) =>
  new Promise<Run>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli.ts", ...args], { cwd, env: { ...env, ...extraEnv } })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

/** A successful command: exit 0, nothing on stderr, one JSON record on stdout. */
const ok = async (...args: Array<string>) => {
  const run = await svc(args)
  expect(run.stderr).toBe("")
  expect(run.code).toBe(0)
  return JSON.parse(run.stdout)
}

/** A failed command: exit 1, nothing on stdout, exactly one line on stderr. */
const fails = async (args: ReadonlyArray<string>, extraEnv?: NodeJS.ProcessEnv) => {
  const run = await svc(args, extraEnv)
  expect(run.stdout).toBe("")
  expect(run.code).toBe(1)
  expect(run.stderr).toMatch(/^svc: [^\n]+\n$/)
  return run.stderr.trimEnd()
}

const slow = 120_000

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

  // These never open the database, so they may run side by side.
  it("rejects invalid input, a bad config and bad usage", async () => {
    const [negative, scope, config, usage] = await Promise.all([
      fails(["credits", "add", account, "--amount", "-5", "--reference", "inv-2"]),
      fails(["keys", "create", account, "--scope", "root"]),
      fails(["accounts", "show", account], { SVC_CONFIG: join(dir, "missing.json") }),
      svc(["accounts", "create"])
    ])
    expect(negative).toBe("svc: invalid_request: --amount: must be greater than zero")
    expect(scope).toMatch(/^svc: invalid_request: --scope: Expected "chat", actual "root"; .*"monitoring"/)
    expect(config).toMatch(/^svc: invalid configuration: SVC_CONFIG: no file at /)
    expect(usage.code).not.toBe(0)
    expect(usage.stdout).toBe("")
  }, slow)
})
