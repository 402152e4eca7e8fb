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
import { Agents } from "../services/Agents.ts"
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

const noColour = { stdout: false, stderr: false }

/** Runs a command line in this process against the shared services (or `services`), capturing its output. */
const svc = async (args: ReadonlyArray<string>, services?: OperatorServices, colour = noColour): Promise<Run> => {
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
    runCli(services ?? shared, colour)(["node", "svc", ...args]).pipe(
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
    expect(negative).toBe("svc: invalid_request: --amount: must be greater than zero, got \"-5\"")
    expect(scope).toBe("svc: invalid_request: --scope: expected one of chat, agents, monitoring, admin, got \"root\"")
    expect(config).toMatch(/^svc: invalid configuration: SVC_CONFIG: no file at /)
    expect(usage.code).not.toBe(0)
    expect(usage.stdout).toBe("")
  }, slow)

  it("tells what is wrong with a flag in words, never in the schema's", async () => {
    const cases: ReadonlyArray<[ReadonlyArray<string>, string]> = [
      [["accounts", "create", "--name", "x", "--credit", "1.0000000001"], "--credit: expected a decimal USD amount with at most 9 decimal places, got \"1.0000000001\""],
      [["accounts", "create", "--name", "x", "--credit", "-1"], "--credit: must not be negative, got \"-1\""],
      [["accounts", "create", "--name", ""], "--name: expected a value that is not empty, got \"\""],
      [["keys", "create", account], "--scope: expected at least one value"],
      [["keys", "create", account, "--scope", "chat", "--rpm", "lots"], "--rpm: expected a whole number, got \"lots\""],
      [["keys", "create", account, "--scope", "chat", "--name", ""], "--name: expected a value that is not empty, got \"\""],
      [["keys", "limits", "key_x", "--tpm", "1.5"], "--tpm: expected a whole number, got 1.5"],
      [["accounts", "limits", account, "--concurrency", "0"], "--concurrency: expected a whole number from 1 to 2147483647, got 0"],
      [["accounts", "list", "--limit", "1001"], "--limit: must be a whole number from 1 to 1000, got \"1001\""],
      [["keys", "list", account, "--cursor", "nope"], "--cursor: not a cursor from this list (pass next_cursor from the previous page unchanged), got \"nope\""]
    ]
    const lines = await Promise.all(cases.map(([args]) => fails(args)))
    expect(lines).toEqual(cases.map(([, line]) => `svc: invalid_request: ${line}`))
    for (const line of lines) expect(line).not.toMatch(/Expected|actual|undefined/)
  }, slow)

  it("lists accounts and an account's keys a page at a time, as the admin API does", async () => {
    const created: Array<string> = []
    for (const name of ["list-1", "list-2", "list-3"]) created.push((await ok("accounts", "create", "--name", name)).id)
    const first = await ok("accounts", "list", "--limit", "2")
    expect(first).toMatchObject({ object: "list", has_more: true, next_cursor: expect.any(String) })
    expect(first.data.map((item: { id: string }) => item.id)).toEqual([created[2], created[1]])
    const second = await ok("accounts", "list", "--limit", "1", "--cursor", first.next_cursor)
    expect(second.data.map((item: { id: string }) => item.id)).toEqual([created[0]])
    expect((await ok("accounts", "list")).data.length).toBeGreaterThanOrEqual(4)

    const issued = await ok("keys", "create", created[0]!, "--scope", "chat")
    const revoked = await ok("keys", "revoke", issued.id)
    const newer = await ok("keys", "create", created[0]!, "--scope", "monitoring", "--name", "newer")
    const { key: _, ...newerRecord } = newer
    expect(await ok("keys", "list", created[0]!)).toEqual({
      object: "list",
      data: [newerRecord, revoked],
      next_cursor: null,
      has_more: false
    })
    const paged = await ok("keys", "list", created[0]!, "--limit", "1")
    expect(paged).toMatchObject({ data: [newerRecord], has_more: true })
    expect((await ok("keys", "list", created[0]!, "--cursor", paged.next_cursor)).data).toEqual([revoked])
    expect(await fails(["keys", "list", "acct_x"])).toBe("svc: not_found: No account acct_x.")
  }, slow)

  it("lists, shows and deletes an account's agents and their documents", async () => {
    const owner = (await ok("accounts", "create", "--name", "Agent owner")).id
    const { agent, document } = await runtime!.runPromise(Effect.gen(function*() {
      const agents = yield* Agents
      const agent = yield* agents.create(owner, {
        name: "helper",
        instructions: "Be brief.",
        routing: { model: "auto" },
        embeddingModel: "svc/embed",
        conversationCap: 10
      })
      const document = yield* agents.addDocument(owner, agent.id, { title: "Notes", characters: 5, receiptId: null }, [
        { text: "notes", embedding: [1, 0] }
      ])
      return { agent, document }
    }))
    const listed = await ok("agents", "list", owner)
    expect(listed).toMatchObject({ object: "list", data: [{ id: agent.id, object: "agent", name: "helper", document_count: 1 }] })
    expect(await ok("agents", "show", owner, agent.id)).toEqual(listed.data[0])
    expect(await ok("agents", "documents", owner, agent.id)).toMatchObject({ data: [{ id: document.id, title: "Notes", chunks: 1 }] })
    expect(await ok("agents", "delete-document", owner, agent.id, document.id)).toMatchObject({ id: document.id })
    expect((await ok("agents", "documents", owner, agent.id)).data).toEqual([])
    expect(await ok("agents", "delete", owner, agent.id)).toMatchObject({ id: agent.id })
    // Gone, and another account's agent is as unknown as a deleted one.
    expect(await svc(["agents", "show", owner, agent.id])).toMatchObject({ code: 1, stderr: `svc: not_found: No agent ${agent.id}.\n` })
    expect(await svc(["agents", "show", account, agent.id])).toMatchObject({ code: 1 })
  }, slow)

  it("describes every command and every flag in --help, styled only where colour is allowed", async () => {
    const commands = [
      [],
      ["accounts"], ["accounts", "create"], ["accounts", "show"], ["accounts", "list"], ["accounts", "limits"],
      ["keys"], ["keys", "create"], ["keys", "list"], ["keys", "limits"], ["keys", "revoke"],
      ["credits"], ["credits", "add"],
      ["prompt-keys"], ["prompt-keys", "rotate"],
      ["agents"], ["agents", "list"], ["agents", "show"], ["agents", "delete"], ["agents", "documents"], ["agents", "delete-document"]
    ]
    // What @effect/cli says of every flag of a kind; a flag needs words of its own besides.
    const generic = /^(A user-defined piece of text\.|A true or false value\.|This setting is optional\.|This option may be repeated.*|One of the following: .*)$/
    for (const command of commands) {
      const help = await svc([...command, "--help"])
      expect(help).toMatchObject({ code: 0, stderr: "" })
      expect(help.stdout).not.toContain("\u001b")
      const blocks = help.stdout.split(/\n\s*\n/).map((block) => block.trimEnd()).filter((block) => block !== "")
      const description = blocks[blocks.indexOf("DESCRIPTION") + 1]
      expect(blocks, command.join(" ")).toContain("DESCRIPTION")
      expect(description?.length, command.join(" ")).toBeGreaterThan(10)
      // Under ARGUMENTS and OPTIONS: each unindented block names a flag or argument, indented blocks describe it.
      let flag: string | undefined
      const described = new Map<string, boolean>()
      let inFlags = false
      for (const block of blocks) {
        if (/^[A-Z]+$/.test(block)) inFlags = block === "ARGUMENTS" || block === "OPTIONS"
        else if (inFlags && !block.startsWith(" ")) described.set((flag = block), false)
        else if (inFlags && flag !== undefined && !generic.test(block.trim())) described.set(flag, true)
      }
      expect([...described].filter(([, has]) => !has).map(([name]) => `${command.join(" ")} ${name}`)).toEqual([])
    }
    const coloured = await svc(["accounts", "--help"], undefined, { stdout: true, stderr: true })
    expect(coloured.stdout).toContain("\u001b[")
    const plain = await svc(["accounts", "--help"])
    expect(plain.stdout).toBe(coloured.stdout.replace(/\u001b\[[0-9;]*m/g, ""))
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
      const child = spawn(process.execPath, ["dist/cli.js", ...args], { cwd, env: processEnv })
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

  it("makes a new operator key and prints it once; each rotation replaces the last", async () => {
    const first = await spawned(["admin-key", "rotate"])
    expect(first).toMatchObject({ code: 0, stderr: "" })
    const record = JSON.parse(first.stdout)
    expect(record).toMatchObject({ object: "operator_key", replaces_previous: true })
    expect(record.key).toMatch(/^svc_admin_[0-9A-Za-z]{40}$/)
    const second = JSON.parse((await spawned(["admin-key", "rotate"])).stdout)
    expect(second.key).not.toBe(record.key)
  }, slow)

  it("prints help without styles into a pipe, and its usage errors too", async () => {
    const help = await spawned(["keys", "--help"])
    expect(help).toMatchObject({ code: 0, stderr: "" })
    expect(help.stdout).toContain("API keys of an account")
    expect(help.stdout).not.toContain("\u001b")
    const usage = await spawned(["accounts", "create"])
    expect(usage.code).not.toBe(0)
    expect(usage.stdout + usage.stderr).not.toContain("\u001b")
  }, slow)
})
