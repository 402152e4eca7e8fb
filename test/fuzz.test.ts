/**
 * The fuzz suite (issue 12, item 9): fast-check properties over every
 * endpoint of the API, on the real server over HTTP (a bare socket client, so
 * hostile headers and lying lengths reach it as sent). Generated cases mutate
 * a valid request of each endpoint (test/fuzz/cases.ts); every answer must
 * hold test/fuzz/checks.ts: no status ≥ 500, every error in the contract's
 * envelope with a known code and a short message that quotes no more than a
 * prefix of any input, and refused requests write nothing.
 *
 * ~10,000 cases by default; `SVC_FUZZ_RUNS=100000` for more. Seeded and
 * replayable: a failure prints fast-check's seed and path; rerun with
 * `SVC_FUZZ_SEED=<seed> SVC_FUZZ_PATH=<path> npx vitest run test/fuzz.test.ts`.
 */
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Api } from "../src/api/Api.ts"
import { Effect } from "effect"
import { Billing } from "../services/Billing.ts"
import { caseArb, ENDPOINTS, type Fixture, type FuzzCase } from "./fuzz/cases.ts"
import { checkResponse, FINGERPRINT_SQL } from "./fuzz/checks.ts"
import { type RawResponse, sendRaw } from "./fuzz/rawHttp.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const TOTAL = Number(process.env.SVC_FUZZ_RUNS ?? 10_000)
const SEED = process.env.SVC_FUZZ_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.SVC_FUZZ_SEED)
const PATH = process.env.SVC_FUZZ_PATH
/** Cases in flight at once. */
const CONCURRENCY = 8

let gateway: TestGateway
let port: number
let fixture: Fixture

beforeAll(async () => {
  // Standard-class text is kept, so transcripts are written and read back too.
  gateway = await startGateway({ config: { promptStorage: { standardRoute: true } } })
  port = Number(new URL(gateway.url).port)
  const account = await gateway.account({ credit: "1000", scopes: ["chat", "monitoring"] })
  const key = async (accountId: string, scopes: Array<string>) =>
    (await gateway.request("POST", `/v1/admin/accounts/${accountId}/keys`, { body: { scopes } })).body
  const monitoring = await key(account.id, ["monitoring"])
  const broke = await gateway.account({ credit: "0", scopes: ["chat"] })
  const revoked = await key(account.id, ["chat"])
  await gateway.request("DELETE", `/v1/admin/keys/${revoked.id}`)
  const spare = await key(broke.id, ["chat"])
  const agents = await key(account.id, ["agents"])
  const agent = (await gateway.request("POST", "/v1/agents", {
    key: agents.key,
    body: { name: "fuzzed", instructions: "Be brief.", knowledge: [{ title: "Doc", text: "Some knowledge." }] }
  })).body
  const document = (await gateway.request("GET", `/v1/agents/${agent.id}/documents`, { key: agents.key })).body.data[0]
  const spareAgent = (await gateway.request("POST", "/v1/agents", { key: agents.key, body: { name: "spare", instructions: "" } })).body
  const call = await gateway.request("POST", "/v1/chat/completions", {
    key: account.key,
    body: { model: "svc/swift", messages: [{ role: "user", content: "hi" }] }
  })
  fixture = {
    adminKey: gateway.adminKey,
    chatKey: account.key,
    monitoringKey: monitoring.key,
    brokeKey: broke.key,
    revokedKey: revoked.key,
    accountId: account.id,
    spareKeyId: spare.id,
    receiptId: call.headers.get("x-svc-receipt-id")!,
    agentsKey: agents.key,
    agentId: agent.id,
    spareAgentId: spareAgent.id,
    documentId: document.id
  }
  console.log(`fuzz: ${TOTAL} cases, seed ${SEED}${PATH === undefined ? "" : `, path ${PATH}`}`)
})
afterAll(() => gateway?.close())

const send = (fuzzCase: FuzzCase) => sendRaw(port, fuzzCase.request)

/** Answers seen per endpoint and status, so the run shows (and the suite asserts) that cases reach past the edge. */
const seen = new Map<string, Map<number, number>>()
const count = (fuzzCase: FuzzCase, status: number) => {
  const statuses = seen.get(fuzzCase.label) ?? new Map<number, number>()
  statuses.set(status, (statuses.get(status) ?? 0) + 1)
  seen.set(fuzzCase.label, statuses)
}

/** Sends the cases `CONCURRENCY` at a time; each answer is checked as it arrives. */
const sendAll = async (cases: ReadonlyArray<FuzzCase>): Promise<Array<RawResponse>> => {
  const answers: Array<RawResponse> = new Array(cases.length)
  let next = 0
  const worker = async () => {
    while (next < cases.length) {
      const index = next++
      answers[index] = await send(cases[index]!)
      checkResponse(cases[index]!, answers[index]!)
      count(cases[index]!, answers[index]!.status)
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, cases.length) }, worker))
  return answers
}

const fingerprint = async () => JSON.stringify(await gateway.query(FINGERPRINT_SQL))

const settings = (runs: number) => ({
  numRuns: Math.max(1, runs),
  seed: SEED,
  ...(PATH === undefined ? {} : { path: PATH }),
  // Shrinking re-sends whole batches; a bounded search still names a small failing batch.
  interruptAfterTimeLimit: 240_000,
  markInterruptAsFailure: true,
  endOnFailure: process.env.SVC_FUZZ_SHRINK === undefined
})

describe("fuzz", () => {
  it("covers every endpoint the API declares", () => {
    const declared = Object.values(Api.groups).flatMap((group) =>
      Object.values(group.endpoints).map((endpoint) => `${endpoint.method} ${endpoint.path}`)
    )
    const fuzzed = new Set(ENDPOINTS.map((endpoint) => `${endpoint.method} ${endpoint.route}`))
    expect(declared.length).toBeGreaterThan(10)
    expect(declared.filter((endpoint) => !fuzzed.has(endpoint))).toEqual([])
  })

  it("no answer is a 5xx; every error is the envelope with a known code and a short message", async () => {
    const batch = 16
    const cases = fc.array(caseArb(() => fixture), { minLength: batch, maxLength: batch })
    const started = performance.now()
    await fc.assert(fc.asyncProperty(cases, async (batchCases) => void await sendAll(batchCases)), settings((TOTAL * 0.8) / batch))
    console.log(`fuzz: ${Math.round(TOTAL * 0.8)} cases in ${((performance.now() - started) / 1000).toFixed(1)} s`)
    console.log([...seen].map(([label, statuses]) => `  ${label}: ${[...statuses].sort().map(([status, n]) => `${status}×${n}`).join(" ")}`).join("\n"))
    // Every endpoint was answered with success and with refusals: the cases reach past the edge.
    if (TOTAL >= 2_000) {
      for (const endpoint of ENDPOINTS) {
        const statuses = [...(seen.get(endpoint.name)?.keys() ?? [])]
        if (endpoint.refusedWhenValid !== true) expect(statuses.some((status) => status < 300), endpoint.name).toBe(true)
        expect(statuses.some((status) => status >= 400), endpoint.name).toBe(true)
      }
    }
  }, 600_000)

  it("a batch of refused requests writes nothing (balances, ledger, keys, receipts, events)", async () => {
    const batch = 4
    let checked = 0
    let batches = 0
    const writes = caseArb(() => fixture).filter((c) => c.request.method !== "GET")
    const started = performance.now()
    await fc.assert(
      fc.asyncProperty(fc.array(writes, { minLength: batch, maxLength: batch }), async (batchCases) => {
        batches++
        // The previous batch's calls may still be settling (a stream settles after its last byte).
        await gateway.run(Effect.flatMap(Billing, (billing) => billing.drained))
        const before = await fingerprint()
        const answers = await sendAll(batchCases)
        if (answers.some((answer) => answer.status < 400)) return
        checked++
        const after = await fingerprint()
        if (after !== before) {
          const [was, now] = [JSON.parse(before)[0], JSON.parse(after)[0]]
          const changed = Object.keys(now).filter((table) => now[table] !== was[table])
          throw new Error(
            `refused requests wrote ${changed.join(", ")}: ${batchCases.map((c, i) => `${c.label} → ${answers[i]!.status}`).join(", ")}`
          )
        }
      }),
      settings((TOTAL * 0.2) / batch)
    )
    console.log(`fuzz: ${batches} batches of ${batch} in ${((performance.now() - started) / 1000).toFixed(1)} s, ${checked} refused whole and compared`)
    // Most batches are refused whole; a property that never compares would prove nothing.
    expect(checked).toBeGreaterThan(batches / 4)
  }, 600_000)

  describe("the malformed inputs issue 12 found are 400 with a short message, and write nothing", () => {
    const deep = (depth: number) => "[".repeat(depth) + "]".repeat(depth)
    const deepObject = (depth: number) => "{\"a\":".repeat(depth) + "1" + "}".repeat(depth)
    const chat = (body: string, headers: ReadonlyArray<[string, string]> = []) => ({
      method: "POST",
      path: "/v1/chat/completions",
      headers: [["authorization", `Bearer ${fixture.chatKey}`], ["content-type", "application/json"], ...headers] as Array<[string, string]>,
      body
    })
    const admin = (method: string, path: string, body?: unknown) => ({
      method,
      path,
      headers: [["authorization", `Bearer ${fixture.adminKey}`], ["content-type", "application/json"]] as Array<[string, string]>,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body)
    })
    const hello = "{\"model\":\"svc/swift\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
    const examples: ReadonlyArray<[string, () => { method: string; path: string; headers: Array<[string, string]>; body?: string | undefined }, ReadonlyArray<string>?]> = [
      ["NUL in an account name", () => admin("POST", "/v1/admin/accounts", { name: "a\u0000b" })],
      ["an unpaired surrogate in an account name", () => admin("POST", "/v1/admin/accounts", "{\"name\":\"\\udc00x\"}")],
      ["NUL in a credit reference", () => admin("POST", `/v1/admin/accounts/${fixture.accountId}/credits`, { amount_usd: "1", reference: "r\u0000" })],
      ["rpm past 2³¹ − 1 on a new key", () => admin("POST", `/v1/admin/accounts/${fixture.accountId}/keys`, { scopes: ["chat"], rpm: 2 ** 31 })],
      ["tpm of 1e400 on a key", () => admin("PATCH", `/v1/admin/keys/${fixture.spareKeyId}`, "{\"tpm\":1e400}")],
      ["a credit of thirty digits", () => admin("POST", `/v1/admin/accounts/${fixture.accountId}/credits`, { amount_usd: "9".repeat(30), reference: "big" })],
      ["NUL in a key name", () => admin("POST", `/v1/admin/accounts/${fixture.accountId}/keys`, { scopes: ["chat"], name: "\u0000" })],
      ["NUL in an account id", () => admin("GET", "/v1/admin/accounts/acct_%00")],
      ["NUL in a key id", () => admin("DELETE", "/v1/admin/keys/key_%00")],
      ["NUL in a receipt id", () => ({ ...admin("GET", "/v1/receipts/rcpt_%00") })],
      ["NUL in a prompt", () => chat(`${hello.replace("hi", "a\\u0000b")}}`)],
      ["an unpaired surrogate in a prompt", () => chat(`${hello.replace("hi", "\\ud800")}}`)],
      ["10,000-deep JSON", () => chat(deep(10_000))],
      ["10,000-deep messages", () => chat(`{"model":"svc/swift","messages":${deep(10_000)}}`)],
      ["200,000-deep tool parameters", () => chat(`${hello},"tools":[{"type":"function","function":{"name":"f","parameters":${deepObject(200_000)}}}]}`)],
      ["an array past the item limit", () => chat(`${hello},"stop":[${Array(10_001).fill("\"x\"").join(",")}]}`)],
      ["a 5 MB model name", () => chat(`{"model":"${"m".repeat(5_000_000)}","messages":[{"role":"user","content":"hi"}]}`), ["m".repeat(64)]],
      ["a 10 KB Idempotency-Key", () => chat(`${hello}}`, [["idempotency-key", "k".repeat(10_000)]]), ["k".repeat(64)]],
      ["a 10 KB model id in the path", () => admin("GET", `/v1/models/${"y".repeat(10_000)}`), ["y".repeat(64)]],
      ["a 10 KB unknown route", () => admin("GET", `/v1/${"z".repeat(10_000)}`), ["z".repeat(64)]]
    ]
    for (const [name, make, sent = []] of examples) {
      it(name, async () => {
        const before = await fingerprint()
        const request = make()
        const response = await sendRaw(port, request)
        const fuzzCase = { label: name, endpoint: ENDPOINTS[0]!, request, sent }
        checkResponse(fuzzCase, response)
        expect(response.status, response.body.slice(0, 300)).toBeGreaterThanOrEqual(400)
        expect(response.status).toBeLessThan(500)
        expect(JSON.parse(response.body).error.message.length).toBeLessThanOrEqual(200)
        expect(await fingerprint()).toBe(before)
      })
    }
  })
})
