/**
 * Rate limits through the real server: a key's rpm and tpm, the account's
 * cap on concurrent calls, the `x-ratelimit-*` headers on JSON, stream and
 * embeddings responses and on the 429 with its `Retry-After`, and the admin
 * API that sets and changes limits (bad values are 400 naming the field).
 * One gateway, in-process store (PGlite) or PostgreSQL with DATABASE_URL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
let upstream: FakeOpenAi

beforeAll(async () => {
  upstream = await startFakeOpenAi()
  gateway = await startGateway({
    config: {
      limits: { defaults: { concurrency: 2 } },
      models: [{
        id: "svc/slow",
        context: 32000,
        pricing: { input: "1.00", output: "2.00" },
        modalities: ["text"],
        capabilities: ["chat", "streaming"]
      }],
      providers: [
        { id: "sandbox", plugin: "sandbox", deployments: [{ model: "svc/swift" }, { model: "svc/embed" }] },
        {
          id: "slow",
          plugin: "openai-compatible",
          baseUrl: upstream.baseUrl,
          deployments: [{ model: "svc/slow", upstreamModel: "s", cost: { input: "0.10", output: "0.20" } }]
        }
      ]
    }
  })
}, 120_000)

afterAll(async () => {
  await gateway?.close()
  await upstream?.close()
})

/** A fresh account's key with the given limits. */
const keyWith = async (limits: { rpm?: number; tpm?: number }) => {
  const { id } = await gateway.account()
  const created = await gateway.request("POST", `/v1/admin/accounts/${id}/keys`, { body: { scopes: ["chat"], ...limits } })
  expect(created.status).toBe(200)
  return { accountId: id, keyId: created.body.id as string, key: created.body.key as string }
}

const hello = { model: "svc/swift", messages: [{ role: "user", content: "hello there" }] }

const chat = (key: string, body: Record<string, unknown> = hello) =>
  gateway.request("POST", "/v1/chat/completions", { key, body })

const limitHeaders = (headers: Headers, name: "requests" | "tokens") => ({
  limit: headers.get(`x-ratelimit-limit-${name}`),
  remaining: headers.get(`x-ratelimit-remaining-${name}`),
  reset: headers.get(`x-ratelimit-reset-${name}`)
})

describe("rate limits", () => {
  it("a key with rpm 5 gets five calls, then 429 rate_limited with Retry-After and the headers", async () => {
    const { key } = await keyWith({ rpm: 5 })
    for (let i = 0; i < 5; i++) {
      const response = await chat(key)
      expect(response.status).toBe(200)
      const requests = limitHeaders(response.headers, "requests")
      expect(requests.limit).toBe("5")
      expect(Number(requests.remaining)).toBe(4 - i)
      expect(requests.reset).toMatch(/^(\d+ms|\d+(\.\d+)?s|\d+m\d+s)$/)
      expect(response.headers.get("x-ratelimit-limit-tokens")).toBeNull()
    }
    const refused = await chat(key)
    expect(refused.status).toBe(429)
    expect(refused.body.error).toMatchObject({ code: "rate_limited", param: null })
    expect(refused.body.error.request_id).toMatch(/^req_/)
    const retryAfter = Number(refused.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(10)
    expect(retryAfter).toBeLessThanOrEqual(12)
    expect(limitHeaders(refused.headers, "requests")).toMatchObject({ limit: "5", remaining: "0" })
    expect(refused.headers.get("x-ratelimit-reset-requests")).toMatch(/^\d+(\.\d+)?s$|^1m0s$/)
  })

  it("a key with a tpm: the estimate is counted at admission, the real tokens once the call is settled", async () => {
    const { key } = await keyWith({ tpm: 1000 })
    const wordy = { model: "svc/swift", messages: [{ role: "user", content: "word ".repeat(60) }] }
    const first = await chat(key, { ...wordy, max_tokens: 600 })
    expect(first.status).toBe(200)
    const used = first.body.usage.total_tokens as number
    expect(used).toBeGreaterThanOrEqual(60)
    expect(used).toBeLessThan(300)
    const tokens = limitHeaders(first.headers, "tokens")
    expect(tokens.limit).toBe("1000")
    // At admission: the input and all 600 output tokens asked for were counted.
    expect(Number(tokens.remaining)).toBeLessThanOrEqual(340)
    // Settled at its real usage: 600 more fit again (they would not, had the estimate stayed counted).
    const second = await chat(key, { ...wordy, max_tokens: 600 })
    expect(second.status).toBe(200)
    // The real tokens of both stay counted: a call that needs the whole bucket must wait.
    const third = await chat(key, { ...hello, max_tokens: 5000 })
    expect(third.status).toBe(429)
    expect(third.body.error.code).toBe("rate_limited")
    expect(third.body.error.message).toContain("1000 tokens per minute")
    expect(Number(third.headers.get("retry-after"))).toBeGreaterThanOrEqual(2)
    expect(limitHeaders(third.headers, "tokens").limit).toBe("1000")
    expect(Number(limitHeaders(third.headers, "tokens").remaining)).toBeLessThan(1000 - used)
  })

  it("streams carry the headers; embeddings are limited too", async () => {
    const { key } = await keyWith({ rpm: 2 })
    const stream = await chat(key, { ...hello, stream: true })
    expect(stream.status).toBe(200)
    expect(stream.headers.get("content-type")).toContain("text/event-stream")
    expect(limitHeaders(stream.headers, "requests")).toMatchObject({ limit: "2", remaining: "1" })
    const embed = () => gateway.request("POST", "/v1/embeddings", { key, body: { model: "svc/embed", input: "words" } })
    const embedded = await embed()
    expect(embedded.status).toBe(200)
    expect(limitHeaders(embedded.headers, "requests")).toMatchObject({ limit: "2", remaining: "0" })
    const refused = await embed()
    expect(refused.status).toBe(429)
    expect(refused.headers.get("retry-after")).not.toBeNull()
  })

  it("an account's concurrent calls are capped (2 here); the permits come back however the calls end", async () => {
    const { accountId, key } = await keyWith({})
    const other = await gateway.request("POST", `/v1/admin/accounts/${accountId}/keys`, { body: { scopes: ["chat"] } })
    upstream.behave({ delayHeadersMs: 1500 })
    try {
      const slow = { model: "svc/slow", messages: [{ role: "user", content: "take your time" }] }
      const running = [chat(key, slow), chat(other.body.key, { ...slow, stream: true })]
      await new Promise((wake) => setTimeout(wake, 500))
      const refused = await chat(key, slow)
      expect(refused.status).toBe(429)
      expect(refused.body.error.message).toContain("2 concurrent calls")
      expect(refused.headers.get("retry-after")).toBe("1")
      // Another account is not held up.
      expect((await chat((await keyWith({})).key)).status).toBe(200)
      expect((await Promise.all(running)).map((response) => response.status)).toEqual([200, 200])
    } finally {
      upstream.behave({})
    }
    const after = await Promise.all([chat(key), chat(key)])
    expect(after.map((response) => response.status)).toEqual([200, 200])
  })

  it("a stream holds its permit until its last byte, and gives it back when the client leaves", async () => {
    const { key } = await keyWith({})
    upstream.behave({ chunkDelayMs: 400 })
    try {
      const body = { model: "svc/slow", stream: true, messages: [{ role: "user", content: "one two three four five six" }] }
      const first = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      })
      expect(first.status).toBe(200)
      const second = new AbortController()
      const leaving = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: second.signal
      })
      expect(leaving.status).toBe(200)
      // Both streams are still sending: the account's two permits are taken.
      expect((await chat(key)).status).toBe(429)
      second.abort()
      await leaving.text().catch(() => "left")
      await first.text()
    } finally {
      upstream.behave({})
    }
    // The permits came back (give the left stream's finalizer a moment).
    await new Promise((wake) => setTimeout(wake, 300))
    expect((await Promise.all([chat(key), chat(key)])).map((response) => response.status)).toEqual([200, 200])
  })

  it("an account's own concurrency cap (PATCH /v1/admin/accounts/{id}/limits) replaces the default; null restores it", async () => {
    const { accountId, key } = await keyWith({})
    const set = await gateway.request("PATCH", `/v1/admin/accounts/${accountId}/limits`, { body: { concurrency: 1 } })
    expect(set.status).toBe(200)
    expect(set.body).toEqual({ object: "account_limits", account_id: accountId, concurrency: 1 })
    const slow = { model: "svc/slow", messages: [{ role: "user", content: "take your time" }] }
    upstream.behave({ delayHeadersMs: 1000 })
    try {
      const running = chat(key, slow)
      await new Promise((wake) => setTimeout(wake, 400))
      expect((await chat(key)).status).toBe(429)
      expect((await running).status).toBe(200)
      await gateway.request("PATCH", `/v1/admin/accounts/${accountId}/limits`, { body: { concurrency: null } })
      const two = [chat(key, slow), chat(key, slow)]
      expect((await Promise.all(two)).map((response) => response.status)).toEqual([200, 200])
    } finally {
      upstream.behave({})
    }
    const missing = await gateway.request("PATCH", "/v1/admin/accounts/acct_missing/limits", { body: { concurrency: 1 } })
    expect(missing.status).toBe(404)
    for (const concurrency of [0, -3, 2.5, 2 ** 31, "5"]) {
      const bad = await gateway.request("PATCH", `/v1/admin/accounts/${accountId}/limits`, { body: { concurrency } })
      expect({ concurrency, status: bad.status, param: bad.body.error.param }).toEqual({ concurrency, status: 400, param: "concurrency" })
    }
  })

  it("operators change a key's limits with PATCH /v1/admin/keys/{id}; null removes one", async () => {
    const { key, keyId } = await keyWith({})
    const plain = await chat(key)
    expect(plain.headers.get("x-ratelimit-limit-requests")).toBeNull()
    const changed = await gateway.request("PATCH", `/v1/admin/keys/${keyId}`, { body: { rpm: 1, tpm: 50000 } })
    expect(changed.status).toBe(200)
    expect(changed.body).toMatchObject({ id: keyId, rpm: 1, tpm: 50000 })
    expect((await chat(key)).status).toBe(200)
    expect((await chat(key)).status).toBe(429)
    const cleared = await gateway.request("PATCH", `/v1/admin/keys/${keyId}`, { body: { rpm: null } })
    expect(cleared.body).toMatchObject({ rpm: null, tpm: 50000 })
    const again = await chat(key)
    expect(again.status).toBe(200)
    expect(again.headers.get("x-ratelimit-limit-requests")).toBeNull()
    expect(again.headers.get("x-ratelimit-limit-tokens")).toBe("50000")
    const missing = await gateway.request("PATCH", "/v1/admin/keys/key_missing", { body: { rpm: 3 } })
    expect(missing.status).toBe(404)
    const byChatKey = await gateway.request("PATCH", `/v1/admin/keys/${keyId}`, { key, body: { rpm: 1000 } })
    expect(byChatKey.status).toBe(401)
  })

  it("bad limits and amounts are 400 invalid_request naming the field, never 500", async () => {
    const { id } = await gateway.account()
    const { keyId } = await keyWith({})
    const cases: Array<[string, string, unknown, string]> = [
      ["PATCH", `/v1/admin/keys/${keyId}`, { rpm: -1 }, "rpm"],
      ["PATCH", `/v1/admin/keys/${keyId}`, { rpm: 0 }, "rpm"],
      ["PATCH", `/v1/admin/keys/${keyId}`, { tpm: 1.5 }, "tpm"],
      ["PATCH", `/v1/admin/keys/${keyId}`, { tpm: 2 ** 31 }, "tpm"],
      ["PATCH", `/v1/admin/keys/${keyId}`, { rpm: "10" }, "rpm"],
      ["POST", `/v1/admin/accounts/${id}/keys`, { scopes: ["chat"], rpm: 2 ** 31 }, "rpm"],
      ["POST", `/v1/admin/accounts/${id}/keys`, { scopes: ["chat"], tpm: 1e300 }, "tpm"],
      ["POST", "/v1/admin/accounts", { name: "rich", credit_usd: "2147483648" }, "credit_usd"],
      ["POST", "/v1/admin/accounts", { name: "rich", credit_usd: "999999999999999999999999999" }, "credit_usd"],
      ["POST", "/v1/admin/accounts", { name: "rich", credit_usd: "9999999999999999999999999999.5" }, "credit_usd"],
      ["POST", `/v1/admin/accounts/${id}/credits`, { amount_usd: "999999999999999999999999999", reference: "r1" }, "amount_usd"]
    ]
    for (const [method, path, body, param] of cases) {
      const response = await gateway.request(method, path, { body })
      expect({ body, status: response.status, code: response.body?.error?.code, param: response.body?.error?.param })
        .toEqual({ body, status: 400, code: "invalid_request", param })
    }
    // The largest values are accepted.
    const largest = await gateway.request("PATCH", `/v1/admin/keys/${keyId}`, { body: { rpm: 2 ** 31 - 1, tpm: 2 ** 31 - 1 } })
    expect(largest.body).toMatchObject({ rpm: 2 ** 31 - 1, tpm: 2 ** 31 - 1 })
    const credit = await gateway.request("POST", `/v1/admin/accounts/${id}/credits`, {
      body: { amount_usd: "2147483647.999999999", reference: "largest" }
    })
    expect(credit.status).toBe(400)
    const most = await gateway.request("POST", `/v1/admin/accounts/${id}/credits`, {
      body: { amount_usd: "2147483647", reference: "largest" }
    })
    expect(most.status).toBe(200)
  })
})

describe("rate limits when their store is down", () => {
  it("Redis unreachable: a limited key gets 503 service_unavailable with Retry-After, an unlimited key is served", async () => {
    // Nothing listens on port 1: every Redis command fails.
    const down = await startGateway({ env: { REDIS_URL: "redis://127.0.0.1:1" } })
    try {
      const { id } = await down.account()
      const limited = await down.request("POST", `/v1/admin/accounts/${id}/keys`, { body: { scopes: ["chat"], rpm: 5 } })
      const refused = await down.request("POST", "/v1/chat/completions", { key: limited.body.key, body: hello })
      expect(refused.status).toBe(503)
      expect(refused.body.error.code).toBe("service_unavailable")
      expect(refused.headers.get("retry-after")).toBe("1")
      const plain = await down.request("POST", `/v1/admin/accounts/${id}/keys`, { body: { scopes: ["chat"] } })
      expect((await down.request("POST", "/v1/chat/completions", { key: plain.body.key, body: hello })).status).toBe(200)
    } finally {
      await down.close()
    }
  }, 60_000)
})
