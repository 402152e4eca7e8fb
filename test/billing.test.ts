/**
 * Billing through the real server: reservations, settlement, receipts,
 * headers, refusals, streams and concurrency, with the money invariants
 * checked after every test. Runs on PGlite, and on PostgreSQL with DATABASE_URL.
 */
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import { billedSuite } from "./support/billedSuite.ts"

const suite = billedSuite((baseUrl) => ({
  billing: { sweepIntervalSeconds: 1 },
  marginFloor: { standard_route: "0.25" },
  models: [
    {
      id: "svc/metered",
      context: 32000,
      pricing: { input: "1.00", output: "2.00" },
      modalities: ["text"],
      capabilities: ["chat", "streaming"]
    },
    {
      id: "svc/thin",
      context: 32000,
      pricing: { input: "1.00", output: "2.00" },
      modalities: ["text"],
      capabilities: ["chat"]
    }
  ],
  providers: [
    { id: "sandbox", plugin: "sandbox", deployments: [{ model: "svc/swift" }, { model: "svc/pro" }] },
    {
      id: "metered",
      plugin: "openai-compatible",
      baseUrl,
      timeoutMs: 2000,
      deployments: [
        { model: "svc/metered", upstreamModel: "m", cost: { input: "0.50", output: "1.00" } },
        // A 20% margin: under the 25% floor of the standard class.
        { model: "svc/thin", upstreamModel: "t", cost: { input: "0.80", output: "1.60" } }
      ]
    }
  ]
}))

const balanceOf = async (id: string) => (await suite.gateway.request("GET", `/v1/admin/accounts/${id}`)).body

const chat = (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  suite.gateway.request("POST", "/v1/chat/completions", { key, body, headers })

describe("billing", () => {
  it("charges a call, says what it cost in headers, and keeps a receipt", async () => {
    const account = await suite.gateway.account({ credit: "1", scopes: ["chat", "monitoring"] })
    const response = await chat(account.key, { model: "svc/pro", messages: [{ role: "user", content: "bill me" }] })
    expect(response.status).toBe(200)
    const upstreamCost = response.headers.get("x-svc-upstream-cost-usd")!
    const margin = response.headers.get("x-svc-margin-usd")!
    const total = response.headers.get("x-svc-total-usd")!
    const receiptId = response.headers.get("x-svc-receipt-id")!
    expect(receiptId).toMatch(/^rcpt_/)
    for (const amount of [upstreamCost, margin, total]) expect(amount).toMatch(/^-?\d+\.\d{9}$/)
    // The sandbox costs nothing upstream, so the whole price is margin.
    expect(upstreamCost).toBe("0.000000000")
    expect(margin).toBe(total)

    const usage = response.body.usage
    // svc/pro: 0.80 in, 3.20 out per 1M tokens = 800 and 3,200 nano-dollars per token.
    const expected = BigInt(usage.prompt_tokens) * 800n + BigInt(usage.completion_tokens) * 3200n
    expect(total).toBe(`0.${expected.toString().padStart(9, "0")}`)

    const account_ = await balanceOf(account.id)
    expect(BigInt(account_.balance_usd.replace(".", ""))).toBe(1_000_000_000n - expected)
    expect(account_.reserved_usd).toBe("0.000000000")

    const receipt = await suite.gateway.request("GET", `/v1/receipts/${receiptId}`, { key: account.key })
    expect(receipt.status).toBe(200)
    expect(receipt.body).toMatchObject({
      id: receiptId,
      object: "receipt",
      account_id: account.id,
      request_id: response.headers.get("x-request-id"),
      endpoint: "/v1/chat/completions",
      model: "svc/pro",
      route: { tier: "pro", model: "svc/pro" },
      privacy_class: "standard_route",
      usage: { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens },
      pricing: { input_per_mtok_usd: "0.800000000", output_per_mtok_usd: "3.200000000" },
      cost: { upstream_usd: upstreamCost, margin_usd: margin, total_usd: total },
      balance_after_usd: account_.balance_usd
    })
    expect(receipt.body.attempts).toEqual([{ model: "svc/pro", outcome: "ok", latency_ms: expect.any(Number) }])
    expect(JSON.stringify(receipt.body)).not.toContain("sandbox")
  })

  it("splits upstream cost and margin to the last digit", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    const response = await chat(account.key, { model: "svc/metered", messages: [{ role: "user", content: "split" }] })
    const { prompt_tokens: input, completion_tokens: output } = response.body.usage
    const nanos = (value: string) => BigInt(value.replace(".", ""))
    expect(nanos(response.headers.get("x-svc-total-usd")!)).toBe(BigInt(input) * 1000n + BigInt(output) * 2000n)
    expect(nanos(response.headers.get("x-svc-upstream-cost-usd")!)).toBe(BigInt(input) * 500n + BigInt(output) * 1000n)
    expect(
      nanos(response.headers.get("x-svc-upstream-cost-usd")!) + nanos(response.headers.get("x-svc-margin-usd")!)
    ).toBe(nanos(response.headers.get("x-svc-total-usd")!))
  })

  it("refuses with 402 when the balance cannot cover the estimate, and bills nothing", async () => {
    const account = await suite.gateway.account({ credit: "0.0001" })
    const before = await balanceOf(account.id)
    // No max_tokens: the estimate reserves 4,096 output tokens at 3.20 per 1M, about 0.013 USD.
    const refused = await chat(account.key, { model: "svc/pro", messages: [{ role: "user", content: "too dear" }] })
    expect(refused.status).toBe(402)
    expect(refused.body.error.code).toBe("insufficient_funds")
    expect(refused.headers.get("x-svc-receipt-id")).toBeNull()
    expect(await balanceOf(account.id)).toEqual(before)
    const events = await suite.gateway.query<{ type: string }>("SELECT type FROM event_log WHERE account_id = $1 AND type LIKE 'payment.%'", [account.id])
    expect(events.map((event) => event.type)).toEqual(["payment.credit_added", "payment.insufficient_funds"])

    // A small max_tokens makes the estimate fit.
    const fits = await chat(account.key, { model: "svc/pro", max_tokens: 5, messages: [{ role: "user", content: "cheap" }] })
    expect(fits.status).toBe(200)
  })

  it("bills nothing for a call whose upstream failed, and frees the reservation", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    suite.upstream.behave({ status: 503 })
    const failed = await chat(account.key, { model: "svc/metered", messages: [{ role: "user", content: "fail" }] })
    expect(failed.status).toBe(502)
    const after = await balanceOf(account.id)
    expect([after.balance_usd, after.reserved_usd]).toEqual(["1.000000000", "0.000000000"])
    expect(await suite.gateway.query("SELECT id FROM receipts WHERE account_id = $1", [account.id])).toEqual([])
    const [reservation] = await suite.gateway.query<{ status: string }>("SELECT status FROM reservations WHERE account_id = $1", [account.id])
    expect(reservation!.status).toBe("released")
  })

  it("bills a JSON completion whose upstream reported no usage on our own token count", async () => {
    const account = await suite.gateway.account({ credit: "1", scopes: ["chat", "monitoring"] })
    suite.upstream.behave({
      raw: {
        body: JSON.stringify({
          id: "up-1",
          object: "chat.completion",
          created: 1,
          model: "m",
          choices: [{ index: 0, message: { role: "assistant", content: "Counted by the gateway itself." }, finish_reason: "stop" }]
        })
      }
    })
    const response = await chat(account.key, { model: "svc/metered", messages: [{ role: "user", content: "no usage" }] })
    expect(response.status).toBe(200)
    const { usage } = response.body
    expect(usage.prompt_tokens).toBeGreaterThan(0)
    // o200k_base: "Count", "ed", " by", " the", " gateway", " itself", "."
    expect(usage.completion_tokens).toBe(7)
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens)
    const receipt = await suite.gateway.request("GET", `/v1/receipts/${response.headers.get("x-svc-receipt-id")}`, {
      key: account.key
    })
    expect(receipt.body.usage).toEqual({ input_tokens: usage.prompt_tokens, output_tokens: 7 })
    expect(receipt.body.cost.total_usd).toBe(response.headers.get("x-svc-total-usd"))
  })

  it("bills a stream on its final usage, with the receipt id on the response head", async () => {
    const account = await suite.gateway.account({ credit: "1", scopes: ["chat", "monitoring"] })
    const client = new OpenAI({ apiKey: account.key, baseURL: `${suite.gateway.url}/v1`, maxRetries: 0 })
    const { data: stream, response } = await client.chat.completions
      .create({
        model: "svc/metered",
        messages: [{ role: "user", content: "stream and bill" }],
        stream: true,
        stream_options: { include_usage: true }
      })
      .withResponse()
    const receiptId = response.headers.get("x-svc-receipt-id")!
    expect(receiptId).toMatch(/^rcpt_/)
    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of stream) usage = chunk.usage ?? usage
    const receipt = await suite.gateway.request("GET", `/v1/receipts/${receiptId}`, { key: account.key })
    expect(receipt.body.usage).toEqual({ input_tokens: usage!.prompt_tokens, output_tokens: usage!.completion_tokens })
    const total = BigInt(usage!.prompt_tokens) * 1000n + BigInt(usage!.completion_tokens) * 2000n
    expect(receipt.body.cost.total_usd).toBe(`0.${total.toString().padStart(9, "0")}`)
    expect((await balanceOf(account.id)).balance_usd).toBe(receipt.body.balance_after_usd)
  })

  it("bills a stream the client left for what was generated, and cancels the upstream", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    suite.upstream.behave({ chunkDelayMs: 200 })
    const aborts = suite.upstream.clientAborts()
    const controller = new AbortController()
    const response = await fetch(`${suite.gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "svc/metered", stream: true, messages: [{ role: "user", content: "one two three four five six seven" }] }),
      signal: controller.signal
    })
    const receiptId = response.headers.get("x-svc-receipt-id")!
    const reader = response.body!.getReader()
    let received = ""
    while (!received.includes("\"content\":\"") || received.split("data:").length < 4) {
      received += new TextDecoder().decode((await reader.read()).value)
    }
    controller.abort()
    await suite.upstream.waitForAborts(aborts + 1)
    const leftAt = Date.now()
    let receipt: any
    while (Date.now() - leftAt < 1000) {
      ;[receipt] = await suite.gateway.query<any>("SELECT * FROM receipts WHERE id = $1", [receiptId])
      if (receipt !== undefined) break
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    expect(receipt, "settled within a second of the client leaving").toBeDefined()
    expect(receipt.output_tokens).toBeGreaterThan(0)
    expect(Number(receipt.total_usd)).toBeGreaterThan(0)
  })

  it("never overspends under concurrent calls on one account", async () => {
    const account = await suite.gateway.account({ credit: "0.003" })
    const calls = 120
    const responses = await Promise.all(
      Array.from({ length: calls }, (_, i) =>
        chat(account.key, { model: "svc/pro", max_tokens: 60, messages: [{ role: "user", content: `race ${i}` }] }))
    )
    const statuses = responses.map((response) => response.status)
    expect(statuses.every((status) => status === 200 || status === 402)).toBe(true)
    expect(statuses.filter((status) => status === 402).length).toBeGreaterThan(0)
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0)
    const receipts = await suite.gateway.query<{ n: number; spent: string }>(
      "SELECT count(*)::int AS n, coalesce(sum(total_usd), 0)::text AS spent FROM receipts WHERE account_id = $1",
      [account.id]
    )
    expect(receipts[0]!.n).toBe(statuses.filter((status) => status === 200).length)
    expect(Number(receipts[0]!.spent)).toBeLessThanOrEqual(0.003)
  })

  it("releases reservations whose lease expired (their process died)", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    // What a process killed mid-call leaves behind: an open reservation past its lease.
    // One statement, as the ledger would: a sweep between two statements would free a hold not yet counted.
    await suite.gateway.query(
      `WITH stranded AS (
         INSERT INTO reservations (id, account_id, request_id, amount_usd, expires_at)
         VALUES ('rcpt_stranded', $1, 'req_dead', 0.5, now() - interval '1 second')
       )
       UPDATE accounts SET reserved_usd = reserved_usd + 0.5 WHERE id = $1`,
      [account.id]
    )
    // The sweeper runs every second in this suite.gateway.
    const deadline = Date.now() + 5000
    let status = "open"
    while (status === "open" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      ;[{ status }] = await suite.gateway.query<{ status: string }>("SELECT status FROM reservations WHERE id = 'rcpt_stranded'") as any
    }
    expect(status).toBe("released")
    expect((await balanceOf(account.id)).available_usd).toBe("1.000000000")
    const [event] = await suite.gateway.query<any>("SELECT data FROM events WHERE receipt_id = 'rcpt_stranded' AND type = 'payment.released'")
    expect(event.data).toEqual({ amount_usd: "0.500000000", reason: "lease_expired" })
  })

  it("still bills a call that outlived its lease, from what is available then", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    // Under the provider's 2 s timeout, over the sweeper's 1 s period.
    suite.upstream.behave({ delayHeadersMs: 1800 })
    const call = chat(account.key, { model: "svc/metered", messages: [{ role: "user", content: "slow" }] })
    // Age the reservation while the upstream thinks; the sweeper (every second) then frees it.
    let expired = 0
    while (expired === 0) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      expired = (await suite.gateway.query(
        "UPDATE reservations SET expires_at = now() - interval '1 second' WHERE account_id = $1 AND status = 'open' RETURNING id",
        [account.id]
      )).length
    }
    const response = await call
    expect(response.status).toBe(200)
    const [reservation] = await suite.gateway.query<{ status: string }>("SELECT status FROM reservations WHERE account_id = $1", [account.id])
    expect(reservation!.status).toBe("settled")
    const events = await suite.gateway.query<{ type: string }>("SELECT type FROM event_log WHERE account_id = $1 AND type LIKE 'payment.re%' ORDER BY created_at", [account.id])
    expect(events.map((event) => event.type)).toEqual(["payment.reserved", "payment.released"])
    const receipt = (await suite.gateway.query<any>("SELECT * FROM receipts WHERE account_id = $1", [account.id]))[0]
    expect(receipt.id).toBe(response.headers.get("x-svc-receipt-id"))
    expect(Number(receipt.total_usd)).toBeGreaterThan(0)
    expect((await balanceOf(account.id)).balance_usd).toBe(receipt.balance_after_usd)
  })

  it("refuses a route under the margin floor with 503, and bills nothing", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    const sent = suite.upstream.requests.length
    const refused = await chat(account.key, { model: "svc/thin", messages: [{ role: "user", content: "thin" }] })
    expect(refused.status).toBe(503)
    expect(refused.body.error.code).toBe("margin_floor_violated")
    expect(suite.upstream.requests.length).toBe(sent)
    const after = await balanceOf(account.id)
    expect([after.balance_usd, after.reserved_usd]).toEqual(["1.000000000", "0.000000000"])
    // A 50% margin passes the same floor.
    expect((await chat(account.key, { model: "svc/metered", messages: [{ role: "user", content: "fat" }] })).status).toBe(200)
  })

  it("hides another account's receipt", async () => {
    const owner = await suite.gateway.account({ credit: "1", scopes: ["chat", "monitoring"] })
    const other = await suite.gateway.account({ credit: "1", scopes: ["monitoring"] })
    const call = await chat(owner.key, { model: "svc/swift", messages: [{ role: "user", content: "mine" }] })
    const receiptId = call.headers.get("x-svc-receipt-id")!
    const foreign = await suite.gateway.request("GET", `/v1/receipts/${receiptId}`, { key: other.key })
    expect(foreign.status).toBe(404)
    expect(foreign.body.error.code).toBe("not_found")
    expect((await suite.gateway.request("GET", "/v1/receipts/rcpt_nope", { key: owner.key })).status).toBe(404)
  })
})
