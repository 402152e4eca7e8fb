/**
 * `POST /v1/embeddings` through the real server, with the official client:
 * the sandbox's deterministic vectors, billing like chat (reserve, settle,
 * headers, receipt, 402), scopes, and an OpenAI-compatible upstream that stays
 * anonymous. Money invariants are checked after every test. Runs on PGlite,
 * and on PostgreSQL with DATABASE_URL.
 */
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import { FAKE_FINGERPRINT, FAKE_PROVIDER_NAME } from "./support/fakeOpenAiUpstream.ts"
import { billedSuite } from "./support/billedSuite.ts"

const suite = billedSuite((baseUrl) => ({
  models: [{
    id: "svc/remote-embed",
    context: 8000,
    pricing: { input: "0.10" },
    modalities: ["text"],
    capabilities: ["embeddings"]
  }],
  providers: [
    { id: "sandbox", plugin: "sandbox", deployments: [{ model: "svc/swift" }, { model: "svc/embed" }] },
    {
      id: "hidden-upstream",
      plugin: "openai-compatible",
      baseUrl,
      timeoutMs: 2000,
      deployments: [{ model: "svc/remote-embed", upstreamModel: "text-embedding-secret", cost: { input: "0.05" } }]
    }
  ]
}))

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${suite.gateway.url}/v1`, maxRetries: 0 })
const norm = (vector: ReadonlyArray<number>) => Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0))
const nanos = (usd: string) => BigInt(usd.replace(".", ""))
const embed = (key: string, body: unknown, headers: Record<string, string> = {}) =>
  suite.gateway.request("POST", "/v1/embeddings", { key, body, headers })

describe("POST /v1/embeddings", () => {
  it("embeds one input with the official client, bills it and keeps a receipt", async () => {
    const account = await suite.gateway.account({ credit: "1", scopes: ["chat", "monitoring"] })
    const { data, response } = await client(account.key).embeddings
      .create({ model: "svc/embed", input: "The quick brown fox jumps over the lazy dog." })
      .withResponse()
    expect(data.object).toBe("list")
    expect(data.model).toBe("svc/embed")
    expect(data.data).toHaveLength(1)
    const [item] = data.data
    expect(item).toMatchObject({ object: "embedding", index: 0 })
    expect(item!.embedding).toHaveLength(256)
    expect(norm(item!.embedding)).toBeCloseTo(1, 5)
    expect(data.usage.prompt_tokens).toBeGreaterThan(0)
    expect(data.usage.total_tokens).toBe(data.usage.prompt_tokens)

    // svc/embed: 0.02 per 1M input tokens = 20 nano-dollars a token; the sandbox costs nothing suite.upstream.
    const total = response.headers.get("x-svc-total-usd")!
    expect(nanos(total)).toBe(BigInt(data.usage.prompt_tokens) * 20n)
    expect(response.headers.get("x-svc-upstream-cost-usd")).toBe("0.000000000")
    expect(response.headers.get("x-svc-margin-usd")).toBe(total)
    const receiptId = response.headers.get("x-svc-receipt-id")!
    expect(receiptId).toMatch(/^rcpt_/)

    const receipt = await suite.gateway.request("GET", `/v1/receipts/${receiptId}`, { key: account.key })
    expect(receipt.status).toBe(200)
    expect(receipt.body).toMatchObject({
      id: receiptId,
      endpoint: "/v1/embeddings",
      model: "svc/embed",
      route: { tier: "embed", model: "svc/embed" },
      usage: { input_tokens: data.usage.prompt_tokens, output_tokens: 0 },
      cost: { upstream_usd: "0.000000000", margin_usd: total, total_usd: total }
    })
    const balance = (await suite.gateway.request("GET", `/v1/admin/accounts/${account.id}`)).body
    expect(nanos(balance.balance_usd)).toBe(1_000_000_000n - nanos(total))
    expect(balance.reserved_usd).toBe("0.000000000")
  })

  it("embeds a batch in order, deterministically, with the requested dimensions", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    const openai = client(account.key)
    const input = ["first text", "second, longer text", "first text"]
    const first = await openai.embeddings.create({ model: "svc/embed", input, dimensions: 64, encoding_format: "float" })
    expect(first.data.map((d) => d.index)).toEqual([0, 1, 2])
    for (const d of first.data) {
      expect(d.embedding).toHaveLength(64)
      expect(norm(d.embedding)).toBeCloseTo(1, 9)
    }
    expect(first.data[2]!.embedding).toEqual(first.data[0]!.embedding)
    expect(first.data[1]!.embedding).not.toEqual(first.data[0]!.embedding)

    const again = await openai.embeddings.create({ model: "svc/embed", input, dimensions: 64, encoding_format: "float" })
    expect(again.data).toEqual(first.data)
    expect(again.usage).toEqual(first.usage)

    // base64 (the client's default) is the same vectors as little-endian float32s.
    const base64 = await openai.embeddings.create({ model: "svc/embed", input: input[1]!, dimensions: 64 })
    base64.data[0]!.embedding.forEach((value, i) => expect(value).toBeCloseTo(first.data[1]!.embedding[i]!, 6))
    const raw = await embed(account.key, { model: "svc/embed", input: "first text", encoding_format: "base64" })
    expect(typeof raw.body.data[0].embedding).toBe("string")
    expect(Buffer.from(raw.body.data[0].embedding, "base64").length).toBe(256 * 4)
  })

  it("refuses with 402 when the balance cannot cover the input, and bills nothing", async () => {
    const account = await suite.gateway.account({ credit: "0.000000010" })
    const response = await embed(account.key, { model: "svc/embed", input: "more than half a token of text here" })
    expect(response.status).toBe(402)
    expect(response.body.error.code).toBe("insufficient_funds")
    const balance = (await suite.gateway.request("GET", `/v1/admin/accounts/${account.id}`)).body
    expect(balance.balance_usd).toBe("0.000000010")
    expect(balance.reserved_usd).toBe("0.000000000")
    expect(await suite.gateway.query("SELECT id FROM receipts WHERE account_id = $1", [account.id])).toEqual([])
  })

  it("is 400 for a model without the embeddings capability or an unknown model, and bills nothing", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    for (const model of ["svc/swift", "svc/nope"]) {
      const response = await embed(account.key, { model, input: "hi" })
      expect(response.status).toBe(400)
      expect(response.body.error).toMatchObject({ code: "invalid_request", param: "model" })
    }
    expect((await embed(account.key, { model: "svc/embed", input: [] })).status).toBe(400)
    expect((await suite.gateway.request("GET", `/v1/admin/accounts/${account.id}`)).body.balance_usd).toBe("1.000000000")
  })

  it("keeps to OpenAI's bounds: 400 naming the parameter, nothing billed", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    const refused = async (body: unknown, param: string) => {
      const response = await embed(account.key, body)
      expect(response.status).toBe(400)
      expect(response.body.error).toMatchObject({ code: "invalid_request", param })
    }
    // svc/embed makes vectors of at most 1,536 dimensions (its catalogue entry).
    await refused({ model: "svc/embed", input: "x", dimensions: 1537 }, "dimensions")
    await refused({ model: "svc/embed", input: Array.from({ length: 2049 }, () => "x") }, "input")
    // 2,048 inputs of ~200 tokens each: each fits the context, together they are over 300,000 tokens.
    await refused({ model: "svc/embed", input: Array.from({ length: 2048 }, () => "word ".repeat(200)) }, "input")
    const balance = (await suite.gateway.request("GET", `/v1/admin/accounts/${account.id}`)).body
    expect(balance).toMatchObject({ balance_usd: "1.000000000", reserved_usd: "0.000000000" })
    expect(await suite.gateway.query("SELECT id FROM receipts WHERE account_id = $1", [account.id])).toEqual([])
  })

  it("bills 2,048 inputs at the model's largest dimensions for their real tokens, the answer written in slices", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    // Ten words each; the sandbox reports its own count, which is what is billed.
    const input = Array.from({ length: 2048 }, (_, i) => `input ${i} says alpha beta gamma delta epsilon zeta eta`)
    const response = await embed(account.key, { model: "svc/embed", input, dimensions: 1536 })
    expect(response.status).toBe(200)
    // Written as a stream of slices, not one 60 MB string.
    expect(response.headers.get("content-length")).toBeNull()
    const { data, usage } = response.body
    expect(data).toHaveLength(2048)
    expect(data.every((item: any, i: number) => item.index === i && item.embedding.length === 1536)).toBe(true)
    expect(usage.prompt_tokens).toBeGreaterThanOrEqual(2048 * 10)
    // svc/embed: 20 nano-dollars a token.
    const total = nanos(response.headers.get("x-svc-total-usd")!)
    expect(total).toBe(BigInt(usage.prompt_tokens) * 20n)
    const [receipt] = await suite.gateway.query<{ input_tokens: number }>(
      "SELECT input_tokens FROM receipts WHERE id = $1",
      [response.headers.get("x-svc-receipt-id")]
    )
    expect(receipt!.input_tokens).toBe(usage.prompt_tokens)
  }, 60_000)

  it("bills our own count when the upstream reports no usage", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    suite.upstream.behaveOnce({
      raw: { body: JSON.stringify({ object: "list", data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }] }) }
    })
    const response = await embed(account.key, { model: "svc/remote-embed", input: "one two three four five" })
    expect(response.status).toBe(200)
    expect(response.body.usage.prompt_tokens).toBeGreaterThan(0)
    expect(nanos(response.headers.get("x-svc-total-usd")!)).toBe(BigInt(response.body.usage.prompt_tokens) * 100n)
  })

  it("needs the chat scope", async () => {
    const account = await suite.gateway.account({ credit: "1", scopes: ["monitoring"] })
    const response = await embed(account.key, { model: "svc/embed", input: "hi" })
    expect(response.status).toBe(401)
    expect(response.body.error.code).toBe("unauthorized")
  })

  it("calls an OpenAI-compatible upstream under its own model name and never names it", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    suite.upstream.requests.length = 0
    const response = await embed(account.key, {
      model: "svc/remote-embed",
      input: ["one two three", "four"],
      dimensions: 3,
      user: "u-1"
    })
    expect(response.status).toBe(200)
    expect(suite.upstream.requests).toHaveLength(1)
    expect(suite.upstream.requests[0]).toMatchObject({
      path: "/v1/embeddings",
      body: { model: "text-embedding-secret", input: ["one two three", "four"], dimensions: 3, user: "u-1", encoding_format: "float" }
    })
    expect(response.body).toEqual({
      object: "list",
      data: [
        { object: "embedding", index: 0, embedding: [3, 0.5, 0.5] },
        { object: "embedding", index: 1, embedding: [1, 0.5, 0.5] }
      ],
      model: "svc/remote-embed",
      usage: { prompt_tokens: 4, total_tokens: 4 }
    })
    for (const secret of ["text-embedding-secret", FAKE_PROVIDER_NAME, FAKE_FINGERPRINT, "hidden-upstream"]) {
      expect(response.text).not.toContain(secret)
    }
    // 0.10 per 1M to the customer, 0.05 upstream: 100 and 50 nano-dollars a token.
    expect(nanos(response.headers.get("x-svc-total-usd")!)).toBe(400n)
    expect(nanos(response.headers.get("x-svc-upstream-cost-usd")!)).toBe(200n)
  })

  it("maps an upstream failure like chat does and releases the reservation", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    suite.upstream.behaveOnce({ status: 500 })
    const failed = await embed(account.key, { model: "svc/remote-embed", input: "x" })
    expect(failed.status).toBe(502)
    expect(failed.body.error.code).toBe("upstream_error")
    suite.upstream.behaveOnce({ status: 400 })
    expect((await embed(account.key, { model: "svc/remote-embed", input: "x" })).status).toBe(400)
    // Our credential refused is not the caller's fault.
    suite.upstream.behaveOnce({ status: 401 })
    const unauthorized = await embed(account.key, { model: "svc/remote-embed", input: "x" })
    expect(unauthorized.status).toBe(502)
    expect(unauthorized.body.error.code).toBe("upstream_error")
    const balance = (await suite.gateway.request("GET", `/v1/admin/accounts/${account.id}`)).body
    expect(balance).toMatchObject({ balance_usd: "1.000000000", reserved_usd: "0.000000000" })
  })

  it("answers a retry with the same Idempotency-Key with the first response, billed once", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    const body = { model: "svc/embed", input: ["once", "only"] }
    const headers = { "idempotency-key": "embed-retry-1" }
    const first = await embed(account.key, body, headers)
    expect(first.status).toBe(200)
    expect(first.headers.get("idempotent-replayed")).toBeNull()
    const retry = await embed(account.key, body, headers)
    expect(retry.status).toBe(200)
    expect(retry.headers.get("idempotent-replayed")).toBe("true")
    expect(retry.text).toBe(first.text)
    expect(retry.headers.get("x-svc-receipt-id")).toBe(first.headers.get("x-svc-receipt-id"))
    const receipts = await suite.gateway.query("SELECT id FROM receipts WHERE account_id = $1", [account.id])
    expect(receipts).toHaveLength(1)

    // The same key with another body, or on another endpoint, is a conflict and bills nothing.
    const other = await embed(account.key, { ...body, input: ["different"] }, headers)
    expect(other.status).toBe(409)
    expect(other.body.error.code).toBe("idempotency_conflict")
    const chat = await suite.gateway.request("POST", "/v1/chat/completions", {
      key: account.key,
      body: { model: "svc/swift", messages: [{ role: "user", content: "hi" }] },
      headers
    })
    expect(chat.status).toBe(409)
    expect(await suite.gateway.query("SELECT id FROM receipts WHERE account_id = $1", [account.id])).toHaveLength(1)
  })
})
