/**
 * Bad input gets the right status and code in the contract's envelope, and
 * changes nothing: every table is compared before and after each request.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
let chatKey: string
let monitoringKey: string
let accountId: string

const LIMIT = 64 * 1024

beforeAll(async () => {
  gateway = await startGateway({ config: { limits: { maxBodyBytes: LIMIT } } })
  const chat = await gateway.account({ credit: "5", scopes: ["chat"] })
  chatKey = chat.key
  accountId = chat.id
  monitoringKey = (await gateway.account({ scopes: ["monitoring"] })).key
})
afterAll(() => gateway?.close())

/** Everything the gateway stores, in a comparable form. */
const snapshot = async () => {
  const tables = ["accounts", "api_keys", "ledger_entries", "reservations", "receipts", "events"]
  const out: Record<string, unknown> = {}
  for (const table of tables) out[table] = await gateway.query(`SELECT * FROM ${table} ORDER BY id`)
  return JSON.stringify(out)
}

const expectEnvelope = (
  response: { status: number; headers: Headers; body: any },
  status: number,
  code: string,
  param?: string | null
) => {
  expect(response.status).toBe(status)
  expect(response.headers.get("content-type")).toContain("application/json")
  expect(Object.keys(response.body)).toEqual(["error"])
  expect(Object.keys(response.body.error).sort()).toEqual(["code", "message", "param", "request_id", "type"])
  expect(response.body.error.code).toBe(code)
  expect(response.body.error.message.length).toBeGreaterThan(5)
  expect(response.body.error.request_id).toBe(response.headers.get("x-request-id"))
  if (param !== undefined) expect(response.body.error.param).toBe(param)
}

const chat = (body: unknown, key: string | null = chatKey) =>
  gateway.request("POST", "/v1/chat/completions", { body, key })

const hello = { model: "svc/pro", messages: [{ role: "user", content: "hi" }] }

describe("bad input changes nothing", () => {
  const cases: ReadonlyArray<[string, () => Promise<any>, number, string, (string | null)?]> = [
    ["malformed JSON", () => chat("{\"model\": \"svc/pro\", \"messages\": [}"), 400, "invalid_request"],
    ["an empty body", () => chat(""), 400, "invalid_request"],
    ["missing messages", () => chat({ model: "svc/pro" }), 400, "invalid_request", "messages"],
    ["empty messages", () => chat({ model: "svc/pro", messages: [] }), 400, "invalid_request", "messages"],
    ["unknown model", () => chat({ ...hello, model: "svc/nope" }), 400, "invalid_request", "model"],
    ["a model that does not chat", () => chat({ ...hello, model: "svc/embed" }), 400, "invalid_request", "model"],
    // No route could express these; refused before a hold, not after every route declined.
    ["tool_choice naming a function not in tools", () =>
      chat({
        ...hello,
        model: "auto",
        tools: [{ type: "function", function: { name: "f" } }],
        tool_choice: { type: "function", function: { name: "g" } }
      }), 400, "invalid_request", "tool_choice"],
    ["tool_choice required without tools", () => chat({ ...hello, tool_choice: "required" }), 400, "invalid_request", "tool_choice"],
    ["messages of the wrong type", () => chat({ model: "svc/pro", messages: "hi" }), 400, "invalid_request", "messages"],
    ["temperature of the wrong type", () => chat({ ...hello, temperature: "hot" }), 400, "invalid_request", "temperature"],
    ["an unknown role", () => chat({ model: "svc/pro", messages: [{ role: "robot", content: "x" }] }), 400, "invalid_request"],
    ["an unknown route strategy", () => chat({ ...hello, route: "sideways" }), 400, "invalid_request", "route"],
    ["a models list that is not a list", () => chat({ ...hello, models: "svc/swift" }), 400, "invalid_request", "models"],
    ["an unknown model in models", () => chat({ ...hello, models: ["svc/ghost"] }), 400, "invalid_request", "models"],
    ["a privacy envelope that is not an object", () => chat({ ...hello, privacy: "private" }), 400, "invalid_request", "privacy"],
    ["an unknown privacy class", () => chat({ ...hello, privacy: { class: "top_secret" } }), 400, "invalid_request", "privacy.class"],
    ["a tool call to a model without tools", () => chat({ ...hello, tools: [{ type: "function", function: { name: "f" } }] }), 400, "invalid_request", "tools"],
    ["a request larger than any context", () => chat({ ...hello, max_tokens: 2_000_000 }), 400, "context_length_exceeded", "messages"],
    ["a body over the limit", () => chat({ ...hello, padding: "x".repeat(LIMIT) }), 413, "payload_too_large"],
    ["no key", () => chat(hello, null), 401, "unauthorized"],
    ["an unknown key", () => chat(hello, "svc_live_" + "A".repeat(40)), 401, "unauthorized"],
    ["a malformed key", () => chat(hello, "not-a-key"), 401, "unauthorized"],
    [
      "a key in the wrong scheme",
      () => gateway.request("POST", "/v1/chat/completions", { body: hello, key: null, headers: { authorization: `Basic ${chatKey}` } }),
      401,
      "unauthorized"
    ],
    ["a key without the chat scope", () => chat(hello, monitoringKey), 401, "unauthorized"],
    ["a non-admin key on the operator API", () => gateway.request("POST", "/v1/admin/accounts", { body: { name: "x" }, key: chatKey }), 401, "unauthorized"],
    ["a non-admin key reading an account", () => gateway.request("GET", `/v1/admin/accounts/${accountId}`, { key: chatKey }), 401, "unauthorized"],
    ["an unknown route", () => gateway.request("GET", "/v1/nothing-here"), 404, "not_found"],
    ["an unknown model id", () => gateway.request("GET", "/v1/models/svc/nope", { key: chatKey }), 404, "not_found"],
    ["an account without a name", () => gateway.request("POST", "/v1/admin/accounts", { body: {} }), 400, "invalid_request", "name"],
    ["a negative starting credit", () => gateway.request("POST", "/v1/admin/accounts", { body: { name: "x", credit_usd: "-1" } }), 400, "invalid_request", "credit_usd"],
    ["a credit given as a number", () => gateway.request("POST", "/v1/admin/accounts", { body: { name: "x", credit_usd: 1.5 } }), 400, "invalid_request", "credit_usd"],
    ["a negative credit", () => gateway.request("POST", `/v1/admin/accounts/${accountId}/credits`, { body: { amount_usd: "-5", reference: "r1" } }), 400, "invalid_request", "amount_usd"],
    ["a malformed credit", () => gateway.request("POST", `/v1/admin/accounts/${accountId}/credits`, { body: { amount_usd: "1.2.3", reference: "r1" } }), 400, "invalid_request", "amount_usd"],
    ["a credit finer than a nano-dollar", () => gateway.request("POST", `/v1/admin/accounts/${accountId}/credits`, { body: { amount_usd: "0.0000000001", reference: "r1" } }), 400, "invalid_request", "amount_usd"],
    ["a credit to an unknown account", () => gateway.request("POST", "/v1/admin/accounts/acct_nope/credits", { body: { amount_usd: "1", reference: "r1" } }), 404, "not_found"],
    ["a key for an unknown account", () => gateway.request("POST", "/v1/admin/accounts/acct_nope/keys", { body: { scopes: ["chat"] } }), 404, "not_found"],
    ["a key with an unknown scope", () => gateway.request("POST", `/v1/admin/accounts/${accountId}/keys`, { body: { scopes: ["root"] } }), 400, "invalid_request"],
    ["a key with no scopes", () => gateway.request("POST", `/v1/admin/accounts/${accountId}/keys`, { body: { scopes: [] } }), 400, "invalid_request", "scopes"],
    ["revoking an unknown key", () => gateway.request("DELETE", "/v1/admin/keys/key_nope"), 404, "not_found"],
    ["reading an unknown account", () => gateway.request("GET", "/v1/admin/accounts/acct_nope"), 404, "not_found"]
  ]

  for (const [name, send, status, code, param] of cases) {
    it(`${name} → ${status} ${code}`, async () => {
      const before = await snapshot()
      expectEnvelope(await send(), status, code, param)
      expect(await snapshot()).toBe(before)
    })
  }

  it("a streamed body over the limit without a declared length → 413", async () => {
    const before = await snapshot()
    const encoder = new TextEncoder()
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(encoder.encode(JSON.stringify({ ...hello, padding: "y".repeat(LIMIT * 2) })))
        controller.close()
      }
    })
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${chatKey}`, "content-type": "application/json" },
      body,
      duplex: "half"
    } as RequestInit)
    expectEnvelope({ status: response.status, headers: response.headers, body: await response.json() }, 413, "payload_too_large")
    expect(await snapshot()).toBe(before)
  })

  it("a reused credit reference with another amount → 409, the first credit stands", async () => {
    const first = await gateway.request("POST", `/v1/admin/accounts/${accountId}/credits`, { body: { amount_usd: "2", reference: "topup-1" } })
    expect(first.status).toBe(200)
    const before = await snapshot()
    const again = await gateway.request("POST", `/v1/admin/accounts/${accountId}/credits`, { body: { amount_usd: "3", reference: "topup-1" } })
    expectEnvelope(again, 409, "idempotency_conflict", "reference")
    expect(await snapshot()).toBe(before)
  })

  it("a revoked key is refused from the next request on", async () => {
    const account = await gateway.account({ scopes: ["chat"] })
    expect((await chat(hello, account.key)).status).toBe(200)
    const revoked = await gateway.request("DELETE", `/v1/admin/keys/${account.keyId}`)
    expect(revoked.status).toBe(200)
    expect(revoked.body.revoked_at).not.toBeNull()
    const before = await snapshot()
    expectEnvelope(await chat(hello, account.key), 401, "unauthorized")
    expect(await snapshot()).toBe(before)
  })

  it("a revocation that races requests of the key still holds from the next request on", async () => {
    const account = await gateway.account({ scopes: ["chat"] })
    expect((await chat(hello, account.key)).status).toBe(200)
    const racing = Array.from({ length: 20 }, () => chat(hello, account.key))
    expect((await gateway.request("DELETE", `/v1/admin/keys/${account.keyId}`)).status).toBe(200)
    await Promise.all(racing)
    for (let i = 0; i < 5; i++) expectEnvelope(await chat(hello, account.key), 401, "unauthorized")
  })

  it("the scope error names the missing scope", async () => {
    const response = await chat(hello, monitoringKey)
    expect(response.body.error.message).toContain("chat")
  })
})
