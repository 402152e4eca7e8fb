/**
 * The privacy canary against a real gateway process: a unique marker sent as
 * the prompt (and echoed back as the completion, and in upstream error
 * bodies) in every privacy class, JSON and streamed, idempotent and replayed,
 * through upstream failures, must reach neither the process's log output nor
 * any file of its embedded database directory (WAL included), nor any table.
 * The child always runs on PGlite, so the file scan runs on both suite runs.
 */
import { randomBytes } from "node:crypto"
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { columnsHolding, fakeProvider, NO_RETENTION } from "./support/canary.ts"
import { TEMPLATE_ENV } from "./support/database.ts"
import { acquireFakeAttestationRuntime } from "./support/fakeAttestationRuntime.ts"
import { type Behaviour, type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { type GatewayProcess, startGatewayProcess, stopAllGatewayProcesses } from "./support/gatewayProcess.ts"

const marker = `canary-${randomBytes(8).toString("hex")}`
/** Written on purpose through the operator API: the file scan must find it, or it proves nothing. */
const accountName = `sanity-${randomBytes(8).toString("hex")}`
const runtimeScope = Effect.runSync(Scope.make())
let upstream: FakeOpenAi
let gateway: GatewayProcess
let dataDir: string

const model = (id: string, capabilities = ["chat", "streaming"]) => ({
  id,
  context: 32000,
  pricing: { input: "1.00", output: "2.00" },
  modalities: ["text"],
  capabilities
})

const classes = [
  { privacy: "standard_route", model: "svc/open" },
  { privacy: "protected_provider_route", model: "svc/open" },
  { privacy: "private_gateway_route", model: "svc/guarded" },
  { privacy: "confidential_runtime_route", model: "svc/vault" }
] as const

interface Answer {
  readonly status: number
  readonly text: string
  readonly headers: Headers
}

const post = async (path: string, key: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
  const response = await fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000)
  })
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    // A stream the upstream broke may end without a proper end.
    text = `<body broke: ${String(error)}>`
  }
  return { status: response.status, text, headers: response.headers }
}

const ask = (target: (typeof classes)[number], content: string, extra: Record<string, unknown> = {}) => ({
  model: target.model,
  messages: [{ role: "user", content }],
  privacy: { class: target.privacy },
  ...extra
})
const streamed = { stream: true, stream_options: { include_usage: true } }

/** Every file under `dir`, recursively (pg_wal included). */
const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))

const filesContaining = (needle: string) =>
  filesUnder(dataDir).filter((file) => readFileSync(file).includes(needle)).map((file) => file.slice(dataDir.length))

/** What was sent and answered, checked in the first test; the traffic runs once, before the scans. */
const answers: Array<{ what: string; answer: Answer; expected: number; echoes: boolean }> = []
let upstreamSawMarker = 0

beforeAll(async () => {
  upstream = await startFakeOpenAi()
  const runtime = await Effect.runPromise(Scope.extend(acquireFakeAttestationRuntime, runtimeScope))
  dataDir = mkdtempSync(join(tmpdir(), "svc-test-privacy-process-"))
  // PGlite runs copy the migrated template; PostgreSQL runs have none, and the gateway migrates the empty directory itself.
  const template = process.env[TEMPLATE_ENV]
  if (template !== undefined) cpSync(template, dataDir, { recursive: true })

  const provider = (id: string, privacy: unknown, deployments: Array<unknown>) =>
    fakeProvider(upstream.baseUrl, id, privacy, deployments, { timeoutMs: 2000 })
  const admin = `admin_${randomBytes(16).toString("hex")}`
  gateway = await startGatewayProcess({
    env: { SVC_DATA_DIR: dataDir, DATABASE_URL: "", SVC_ADMIN_KEY: admin },
    config: {
      // The failures below must reach the upstream every time, not be short-circuited by an open breaker.
      routing: { health: { failureThreshold: 1000 } },
      models: [...["svc/open", "svc/guarded", "svc/vault"].map((id) => model(id)), model("svc/remote-embed", ["embeddings"])],
      providers: [
        // No stated policy: standard only, and the cheapest, so standard requests go here.
        provider("anyone", undefined, [{ model: "svc/open", cost: { input: "0.10", output: "0.20" } }]),
        provider("careful", NO_RETENTION, [
          { model: "svc/open", cost: { input: "0.50", output: "1.00" } },
          { model: "svc/remote-embed", cost: { input: "0.05" } }
        ]),
        provider("own-racks", { ...NO_RETENTION, operatorControlled: true }, [{ model: "svc/guarded" }]),
        provider("enclave", { ...NO_RETENTION, attestation: runtime.config() }, [{ model: "svc/vault" }])
      ]
    }
  })

  const account = JSON.parse((await post("/v1/admin/accounts", admin, { name: accountName, credit_usd: "10" })).text)
  const key = JSON.parse((await post(`/v1/admin/accounts/${account.id}/keys`, admin, { scopes: ["chat"] })).text).key as string
  const send = async (
    what: string,
    expected: number,
    echoes: boolean,
    body: unknown,
    { as = key, headers = {}, path = "/v1/chat/completions" }: { as?: string; headers?: Record<string, string>; path?: string } = {}
  ) => {
    const before = upstream.requests.length
    const answer = await post(path, as, body, headers)
    // The gateway had the marker in hand: it reached the upstream (replays excepted).
    if (upstream.requests.slice(before).some((request) => JSON.stringify(request.body).includes(marker))) upstreamSawMarker++
    answers.push({ what, answer, expected, echoes })
  }

  for (const target of classes) {
    const prompt = `please repeat ${marker} now`
    await send(`${target.privacy} JSON`, 200, true, ask(target, prompt))
    await send(`${target.privacy} stream`, 200, true, ask(target, prompt, streamed))
    // Kept idempotent responses (JSON and streamed) are sealed, and replay byte for byte.
    for (const [kind, extra] of [["JSON", {}], ["stream", streamed]] as const) {
      const headers = { "idempotency-key": `idem-${randomBytes(6).toString("hex")}` }
      const body = ask(target, `keep ${marker} once`, extra)
      await send(`${target.privacy} idempotent ${kind}`, 200, true, body, { headers })
      await send(`${target.privacy} idempotent ${kind} replay`, 200, true, body, { headers })
    }
  }
  // Agents whose preset asks for each class above standard: runs JSON and streamed, continued, idempotent, failing.
  const agentsKey = JSON.parse((await post(`/v1/admin/accounts/${account.id}/keys`, admin, { scopes: ["agents", "chat"] })).text).key as string
  const echoing = { error: { message: `Cannot process "please repeat ${marker} now"`, type: "invalid_request_error" } }
  for (const target of classes.slice(1)) {
    const agent = JSON.parse((await post("/v1/agents", agentsKey, {
      name: `agent at ${target.privacy}`,
      instructions: "Be brief.",
      embedding_model: "svc/remote-embed",
      routing: { model: target.model, privacy: { class: target.privacy } }
    })).text)
    const runs = { as: agentsKey, path: "/v1/agents/runs" }
    await send(`${target.privacy} agent run`, 200, true, { agent: agent.id, input: `please repeat ${marker} now` }, runs)
    const conversation_id = JSON.parse(answers.at(-1)!.answer.text).conversation_id
    const continued = { agent: agent.id, input: `please repeat ${marker} now`, conversation_id }
    await send(`${target.privacy} agent run streamed`, 200, true, continued, { ...runs, path: "/v1/agents/runs?stream=true" })
    const headers = { "idempotency-key": `idem-${randomBytes(6).toString("hex")}` }
    const once = { agent: agent.id, input: `keep ${marker} once`, conversation_id }
    await send(`${target.privacy} idempotent agent run`, 200, true, once, { ...runs, headers })
    await send(`${target.privacy} idempotent agent run replay`, 200, true, once, { ...runs, headers })
    upstream.behave({ status: 500, errorBody: echoing })
    await send(`${target.privacy} agent run, 500 echoing the input`, 502, false, continued, runs)
    upstream.behave({ resetAfterChunks: 4 })
    await send(`${target.privacy} agent run streamed, reset mid-answer`, 200, true, continued, { ...runs, path: "/v1/agents/runs?stream=true" })
    upstream.behave({})
  }

  await send("embeddings", 200, false, { model: "svc/remote-embed", input: [`embed ${marker} please`] }, { path: "/v1/embeddings" })

  // Upstreams echo prompts in their errors: 500s and 400s whose bodies hold the marker, resets, garbage.
  const echo = { error: { message: `Cannot process "please repeat ${marker} now"`, type: "invalid_request_error", param: "messages" } }
  const failures: Array<[string, Behaviour, number, Record<string, unknown>]> = [
    ["500 echoing the prompt", { status: 500, errorBody: echo }, 502, {}],
    ["400 echoing the prompt", { status: 400, errorBody: echo }, 400, {}],
    ["plain-text 500 echoing the prompt", { status: 500, errorBody: `upstream choked on: please repeat ${marker} now` }, 502, {}],
    ["connection reset", { resetBeforeHeaders: true }, 502, {}],
    ["non-JSON 200 echoing the prompt", { raw: { body: `{"oops": "please repeat ${marker} now` } }, 502, {}],
    ["stream 500 echoing the prompt", { status: 500, errorBody: echo }, 502, streamed],
    // The marker is the fourth frame: the caller got it before the upstream broke off.
    ["stream reset mid-answer", { resetAfterChunks: 4 }, 200, streamed]
  ]
  for (const target of classes.slice(1)) {
    for (const [what, behaviour, status, extra] of failures) {
      upstream.behave(behaviour)
      await send(`${target.privacy} ${what}`, status, status === 200, ask(target, `please repeat ${marker} now`, extra))
    }
    // A broken stream that was idempotent is kept as what the caller received: sealed too.
    upstream.behave({ resetAfterChunks: 4 })
    const headers = { "idempotency-key": `idem-${randomBytes(6).toString("hex")}` }
    await send(`${target.privacy} idempotent stream reset mid-answer`, 200, true, ask(target, `please repeat ${marker} now`, streamed), {
      headers
    })
    upstream.behave({})
  }

  // A graceful stop (SIGTERM): the shutdown closes the embedded database.
  await gateway.stop()
}, 180_000)

afterAll(async () => {
  await stopAllGatewayProcesses()
  await upstream?.close()
  await Effect.runPromise(Scope.close(runtimeScope, Exit.void))
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
})

describe("privacy canary across a gateway process", () => {
  it("served the calls (echoing the marker) and failed the failures with their statuses", () => {
    expect(answers.map(({ what, answer }) => ({ what, status: answer.status })))
      .toEqual(answers.map(({ what, expected }) => ({ what, status: expected })))
    // The successful answers carry the marker: it was in the process's hands, so the scans below could find it.
    expect(answers.filter((call) => call.echoes && !call.answer.text.includes(marker)).map((call) => call.what)).toEqual([])
    expect(answers.filter((call) => call.what.endsWith("replay")).every((call) => call.answer.headers.get("idempotent-replayed") === "true"))
      .toBe(true)
    // Every call but the replays (eight of chat, three of agent runs) reached the upstream with the marker.
    const replays = answers.filter((call) => call.what.endsWith("replay")).length
    expect(replays).toBe(11)
    expect(upstreamSawMarker).toBe(answers.length - replays)
  })

  it("stopped gracefully: its shutdown ran and released the data directory", () => {
    expect(gateway.running()).toBe(false)
    expect(existsSync(join(dataDir, "svc.pid"))).toBe(false)
  })

  it("wrote no marker to the process's log output (stdout and stderr)", () => {
    const output = gateway.output()
    // Not vacuous: the failures were logged, and the output was kept whole (the helper keeps the last 256 KiB).
    expect(output).toContain("upstream call failed")
    expect(output.length).toBeLessThan(256 * 1024)
    expect(output.split("\n").filter((line) => line.includes(marker))).toEqual([])
  })

  it("wrote no marker to any file of the embedded database directory, WAL included", () => {
    const files = filesUnder(dataDir)
    expect(files.some((file) => file.includes("/pg_wal/"))).toBe(true)
    expect(files.reduce((size, file) => size + readFileSync(file).length, 0)).toBeGreaterThan(0)
    // The scan finds text that the gateway did write to the database.
    expect(filesContaining(accountName).length).toBeGreaterThan(0)
    expect(filesContaining(marker)).toEqual([])
  })

  it("keeps no marker in any table column (compressed values included)", async () => {
    // Opened after the file scan: opening writes to the directory. Large values may be stored compressed, out of a byte scan's sight.
    const db = await PGlite.create(dataDir)
    try {
      const query = async <Row>(text: string, params?: ReadonlyArray<unknown>) =>
        (await db.query<Row>(text, params as Array<unknown>)).rows
      const { found, searched } = await columnsHolding(query, marker)
      expect(searched.length).toBeGreaterThan(10)
      expect(found).toEqual([])
      // Not vacuous: the same search finds text that was written.
      expect((await columnsHolding(query, accountName)).found).toContain("accounts.name")
    } finally {
      await db.close()
    }
  })
})
