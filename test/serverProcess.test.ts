/**
 * The gateway as a server process, the way an operator runs it (`node
 * dist/main.js`, what `npm start` execs): progress lines on start, the
 * operator key made on a first start (printed once; one process of several
 * gets it), the unauthenticated probes, a SIGTERM that lets a stream in
 * flight finish and be billed before exiting 0, one line (no stack) for a
 * busy port or a HOST with a port, and `npm start` passing SIGTERM on.
 */
import { execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, describe, expect, it } from "vitest"
import { GATEWAY_NODE_FLAGS } from "../src/start/nodeFlags.ts"
import { freshDatabase, type TestDatabase } from "./support/database.ts"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { freePort, type GatewayProcess, startGatewayProcess, stopAllGatewayProcesses } from "./support/gatewayProcess.ts"
import { meteredConfig } from "./support/meteredConfig.ts"

const run = promisify(execFile)
const onPostgres = Boolean(process.env.DATABASE_URL)
const databases: Array<TestDatabase> = []
let upstream: FakeOpenAi | undefined

afterAll(async () => {
  await stopAllGatewayProcesses()
  await upstream?.close()
  await Promise.allSettled(databases.map((database) => database.drop()))
})

const newDatabase = async () => {
  const database = await freshDatabase()
  databases.push(database)
  return database
}

const OPERATOR_KEY = /svc_admin_[0-9A-Za-z]{40}/g

const call = async (gateway: GatewayProcess, path: string, key?: string, body?: unknown) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: {
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000)
  })
  return { status: response.status, headers: response.headers, body: await response.json() as any }
}

/** `node dist/main.js` expected to fail at start: its exit code and stderr. */
const failedStart = async (env: Record<string, string>) => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-start-"))
  try {
    await run(process.execPath, ["dist/main.js"], {
      env: { PATH: process.env.PATH, SVC_DATA_DIR: dataDir, DATABASE_URL: "", SVC_ADMIN_KEY: "k", ...env },
      timeout: 60_000
    })
    return { code: 0, stderr: "" }
  } catch (error: any) {
    return { code: error.code as number, stderr: error.stderr as string }
  }
}

describe("starting", () => {
  it("says what it does while starting, then makes an operator key once and serves the probes without a key", async () => {
    // A real first start: an empty data directory (or a new PostgreSQL database), migrated from nothing.
    const env = onPostgres ? (await newDatabase()).env : { SVC_DATA_DIR: mkdtempSync(join(tmpdir(), "svc-first-")), DATABASE_URL: "" }
    const first = await startGatewayProcess({ env })
    const output = first.output()
    expect(output).toMatch(onPostgres ? /connecting to the PostgreSQL database/ : /opening the embedded database in/)
    expect(output).toMatch(/applying migration 1\/\d+ \(0001_accounts_keys_ledger\)/)
    expect(output).toMatch(/svc listening on http:\/\/127\.0\.0\.1:\d+\/v1/)
    const keys = output.match(OPERATOR_KEY) ?? []
    expect(keys).toHaveLength(1)
    const operatorKey = keys[0]!

    expect(await call(first, "/healthz")).toMatchObject({ status: 200, body: { status: "ok" } })
    expect(await call(first, "/readyz")).toMatchObject({ status: 200, body: { status: "ready" } })
    expect((await call(first, "/v1/admin/accounts", operatorKey)).status).toBe(200)
    expect((await call(first, "/v1/admin/accounts", `svc_admin_${"x".repeat(40)}`)).status).toBe(401)
    await first.stop()
    expect(first.exitCode()).toBe(0)

    // A later start makes none and says how to get one; the first key still works.
    const second = await startGatewayProcess({ env })
    expect(second.output()).not.toMatch(OPERATOR_KEY)
    expect(second.output()).toMatch(/use the operator key printed on first start, or set SVC_ADMIN_KEY/)
    expect(second.output()).toMatch(/database schema is up to date/)
    expect((await call(second, "/v1/admin/accounts", operatorKey)).status).toBe(200)
    await second.stop()
  }, 120_000)

  it.runIf(onPostgres)("of two processes making their first start on one database together, exactly one prints the key", async () => {
    const database = await newDatabase()
    const gateways = await Promise.all([startGatewayProcess({ env: database.env }), startGatewayProcess({ env: database.env })])
    const printed = gateways.flatMap((gateway) => gateway.output().match(OPERATOR_KEY) ?? [])
    expect(printed).toHaveLength(1)
    for (const gateway of gateways) expect((await call(gateway, "/v1/admin/accounts", printed[0])).status).toBe(200)
    await Promise.all(gateways.map((gateway) => gateway.stop()))
  }, 120_000)

  it("refuses a busy port in one line naming it, and exits 1", async () => {
    const blocker = createServer()
    const port = await new Promise<number>((bound) => blocker.listen(0, "127.0.0.1", () => bound((blocker.address() as any).port)))
    try {
      const { code, stderr } = await failedStart({ PORT: String(port), HOST: "127.0.0.1" })
      expect(code).toBe(1)
      expect(stderr.trim().split("\n")).toEqual([`svc: cannot listen on 127.0.0.1:${port}: the port is in use by another process; stop it or set PORT`])
    } finally {
      blocker.close()
    }
  }, 60_000)

  it("refuses a HOST that carries a port in one line, before opening the database", async () => {
    const { code, stderr } = await failedStart({ HOST: "127.0.0.1:38125" })
    expect(code).toBe(1)
    expect(stderr.trim()).toBe(
      `svc: invalid configuration: HOST: "127.0.0.1:38125" carries a port; set the address in HOST and the port in PORT`
    )
  }, 60_000)
})

describe("stopping", () => {
  it("on SIGTERM stops accepting, lets a stream in flight finish and be billed, then exits 0", async () => {
    upstream ??= await startFakeOpenAi()
    // 30 frames 100 ms apart: the stream is still running when the signal comes.
    upstream.behave({ chunkDelayMs: 100 })
    const database = await newDatabase()
    const admin = `admin_${randomBytes(16).toString("hex")}`
    const env = { ...database.env, SVC_ADMIN_KEY: admin }
    const config = meteredConfig(upstream.baseUrl)
    const gateway = await startGatewayProcess({ env, config })
    const account = (await call(gateway, "/v1/admin/accounts", admin, { name: "drain", credit_usd: "5" })).body
    const key = (await call(gateway, `/v1/admin/accounts/${account.id}/keys`, admin, { scopes: ["chat", "monitoring"] })).body.key

    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "svc/metered", stream: true, max_tokens: 30, messages: [{ role: "user", content: "count to thirty" }] })
    })
    expect(response.status).toBe(200)
    const receiptId = response.headers.get("x-svc-receipt-id")
    const reader = response.body!.getReader()
    let text = new TextDecoder().decode((await reader.read()).value)

    process.kill(gateway.pid, "SIGTERM")
    // No new connection is accepted while the stream drains.
    await new Promise<void>((wake) => setTimeout(wake, 300))
    await expect(fetch(`${gateway.url}/healthz`, { signal: AbortSignal.timeout(5_000) })).rejects.toThrow()
    expect(gateway.running()).toBe(true)

    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value)
    expect(text.trim().endsWith("data: [DONE]")).toBe(true)
    expect(text).not.toContain("event: error")
    // The drain is over once the stream is: the process exits by itself.
    await gateway.exited
    expect(gateway.exitCode()).toBe(0)
    expect(gateway.output()).toMatch(/stopping: no new connections; calls in flight may finish within 25 s/)

    // The next process finds the call settled and billed in full.
    const next = await startGatewayProcess({ env, config })
    const receipt = await call(next, `/v1/receipts/${receiptId}`, key)
    expect(receipt.status).toBe(200)
    expect(receipt.body.usage.output_tokens).toBeGreaterThan(0)
    expect(Number(receipt.body.cost.total_usd)).toBeGreaterThan(0)
    await next.stop()
  }, 120_000)

  it("cuts a stream still running after shutdown.drainSeconds, bills what it delivered, and exits 0", async () => {
    upstream ??= await startFakeOpenAi()
    // 30 frames 400 ms apart: far longer than the one second of drain.
    upstream.behave({ chunkDelayMs: 400 })
    const database = await newDatabase()
    const admin = `admin_${randomBytes(16).toString("hex")}`
    const env = { ...database.env, SVC_ADMIN_KEY: admin }
    const config = { ...meteredConfig(upstream.baseUrl), shutdown: { drainSeconds: 1 } }
    const gateway = await startGatewayProcess({ env, config })
    const account = (await call(gateway, "/v1/admin/accounts", admin, { name: "cut", credit_usd: "5" })).body
    const key = (await call(gateway, `/v1/admin/accounts/${account.id}/keys`, admin, { scopes: ["chat", "monitoring"] })).body.key

    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "svc/metered", stream: true, max_tokens: 30, messages: [{ role: "user", content: "count to thirty" }] })
    })
    const receiptId = response.headers.get("x-svc-receipt-id")
    const reader = response.body!.getReader()
    let text = new TextDecoder().decode((await reader.read()).value)
    const signalled = Date.now()
    process.kill(gateway.pid, "SIGTERM")
    try {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value)
    } catch {
      // The connection was cut.
    }
    expect(text).not.toContain("data: [DONE]")
    await gateway.exited
    expect(gateway.exitCode()).toBe(0)
    expect(Date.now() - signalled).toBeLessThan(10_000)

    const next = await startGatewayProcess({ env, config })
    const receipt = await call(next, `/v1/receipts/${receiptId}`, key)
    expect(receipt.status).toBe(200)
    const delivered = text.split("\n").filter((line) => line.startsWith("data: {")).length
    expect(receipt.body.usage.output_tokens).toBeGreaterThan(0)
    expect(receipt.body.usage.output_tokens).toBeLessThan(30)
    expect(delivered).toBeLessThan(30)
    await next.stop()
  }, 120_000)

  it("`npm start` passes SIGTERM to the server, which exits and frees its port", async () => {
    const port = await freePort()
    const dataDir = mkdtempSync(join(tmpdir(), "svc-npm-"))
    const env: Record<string, string> = {}
    for (const [name, value] of Object.entries(process.env)) {
      if (value !== undefined && !/^(PORT|HOST|DATABASE_URL|REDIS_URL|NODE_OPTIONS|VITEST.*|SVC_.*|npm_.*)$/.test(name)) env[name] = value
    }
    const npm = spawn("npm", ["start"], {
      env: { ...env, PORT: String(port), SVC_DATA_DIR: dataDir, SVC_ADMIN_KEY: "k", DATABASE_URL: "" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    npm.stdout.on("data", (chunk) => output += chunk)
    npm.stderr.on("data", (chunk) => output += chunk)
    const deadline = Date.now() + 90_000
    while (!/svc listening on/.test(output)) {
      if (Date.now() > deadline || npm.exitCode !== null) throw new Error(`npm start did not serve:\n${output}`)
      await new Promise<void>((wake) => setTimeout(wake, 100))
    }
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)

    // npm alone gets the signal, as from a process manager that knows only its child.
    npm.kill("SIGTERM")
    const until = Date.now() + 30_000
    let listening = true
    while (listening && Date.now() < until) {
      listening = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(() => true, () => false)
      if (listening) await new Promise<void>((wake) => setTimeout(wake, 200))
    }
    expect(listening).toBe(false)
    // The port is free again: nothing of the server is left holding it.
    const probe = createServer()
    await new Promise<void>((bound, fail) => probe.once("error", fail).listen(port, "127.0.0.1", () => bound()))
    probe.close()
  }, 120_000)
})

describe("one process per core", () => {
  it.runIf(onPostgres)("SVC_WORKERS=2 serves one port from two workers, replaces one that dies, and stops both on SIGTERM", async () => {
    const database = await newDatabase()
    const admin = `admin_${randomBytes(16).toString("hex")}`
    // The supervisor started without the gateway's Node flags: it gives them to its workers itself.
    const gateway = await startGatewayProcess({ env: { ...database.env, SVC_ADMIN_KEY: admin, SVC_WORKERS: "2" }, nodeFlags: [] })
    // Counted in the JSON lines (the output also holds each line as a person would read it).
    const listening = () => gateway.output().match(/"message":"svc listening on/g)?.length ?? 0
    const until = async (condition: () => boolean | Promise<boolean>, what: string) => {
      const deadline = Date.now() + 60_000
      while (!(await condition())) {
        if (Date.now() > deadline) throw new Error(`${what}:\n${gateway.output()}`)
        await new Promise<void>((wake) => setTimeout(wake, 100))
      }
    }
    await until(() => listening() === 2, "two workers did not both listen")
    expect(gateway.output()).toMatch(/starting 2 gateway processes \(SVC_WORKERS\) on one port/)
    const workers = async () => (await run("pgrep", ["-P", String(gateway.pid)]).catch(() => ({ stdout: "" }))).stdout.split("\n").filter(Boolean)
    const [first, second] = await workers()
    expect(second).toBeDefined()
    for (const worker of [first, second]) {
      const commandLine = readFileSync(`/proc/${worker}/cmdline`, "utf8").split("\0")
      expect(commandLine).toEqual(expect.arrayContaining([...GATEWAY_NODE_FLAGS]))
    }

    const account = await call(gateway, "/v1/admin/accounts", admin, { name: "workers", credit_usd: "1" })
    const key = await call(gateway, `/v1/admin/accounts/${account.body.id}/keys`, admin, { name: "k", scopes: ["chat"] })
    const chat = () => call(gateway, "/v1/chat/completions", key.body.key, { model: "svc/swift", messages: [{ role: "user", content: "hi" }] })
    expect((await chat()).status).toBe(200)

    // One worker dies: the other goes on serving, and a new one takes its place.
    process.kill(Number(first), "SIGKILL")
    // A kept-alive connection to the dead worker fails once; a new one reaches the other.
    await until(async () => (await chat().catch(() => ({ status: 0 }))).status === 200, "the other worker did not serve")
    await until(async () => listening() === 3 && (await workers()).length === 2, "the dead worker was not replaced")
    expect(gateway.output()).toMatch(new RegExp(`"message":"worker ${first} ended \\(SIGKILL\\); starting another`))
    expect((await chat()).status).toBe(200)

    await gateway.stop()
    expect(gateway.exitCode()).toBe(0)
  }, 120_000)
})

describe("request log", () => {
  it("writes one JSON line per request — ids, route, status, latency, cost — and never the prompt", async () => {
    const env = onPostgres ? (await newDatabase()).env : { SVC_DATA_DIR: mkdtempSync(join(tmpdir(), "svc-log-")), DATABASE_URL: "" }
    const admin = `admin_${randomBytes(16).toString("hex")}`
    const gateway = await startGatewayProcess({ env: { ...env, SVC_ADMIN_KEY: admin, LOG_FORMAT: "json" } })
    const account = await call(gateway, "/v1/admin/accounts", admin, { name: "logged", credit_usd: "1" })
    const key = await call(gateway, `/v1/admin/accounts/${account.body.id}/keys`, admin, { name: "k", scopes: ["chat"] })
    const marker = `log-marker-${randomBytes(6).toString("hex")}`
    const chat = await call(gateway, "/v1/chat/completions", key.body.key, {
      model: "svc/swift",
      messages: [{ role: "user", content: marker }]
    })
    expect(chat.status).toBe(200)
    const requestId = chat.headers.get("x-request-id")!
    let line: any
    for (let tries = 0; tries < 100 && line === undefined; tries++) {
      line = gateway.output().split("\n").filter((text) => text.startsWith("{")).map((text) => JSON.parse(text))
        .find((entry) => entry.message === "request" && entry.annotations?.request_id === requestId)
      if (line === undefined) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(line).toMatchObject({
      logLevel: "INFO",
      annotations: {
        request_id: requestId,
        key_id: key.body.id,
        account_id: account.body.id,
        method: "POST",
        route: "/v1/chat/completions",
        status: 200,
        model: "svc/swift",
        cost_usd: chat.headers.get("x-svc-total-usd")
      }
    })
    expect(line.annotations.latency_ms).toBeGreaterThanOrEqual(0)
    // Written once, as JSON only: no second logger (the platform's pretty one) writes it again.
    expect(gateway.output()).not.toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] /m)
    expect(gateway.output().split("\n").filter((text) => text.includes(requestId) && text.includes(`"message":"request"`)))
      .toHaveLength(1)
    expect(gateway.output()).not.toContain(marker)
    await gateway.stop()
  }, 120_000)
})
