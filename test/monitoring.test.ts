/**
 * `GET /v1/monitoring` over HTTP: what JSON and streamed calls, a refused
 * and a malformed one leave in the summary (counts, errors by code, spend
 * equal to the receipts, time to first byte of a stream), payment health,
 * provider health without provider names for a customer key, the windows,
 * and the account selector.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fromNumericColumn as usd } from "../services/Money.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
let account: { id: string; key: string }
let other: { id: string; key: string }
const receipts: Array<string> = []

const monitoring = (query = "", key = account.key) => gateway.request("GET", `/v1/monitoring${query}`, { key })

const chat = (body: Record<string, unknown>) =>
  gateway.request("POST", "/v1/chat/completions", {
    key: account.key,
    body: { model: "svc/swift", messages: [{ role: "user", content: "Say hello." }], ...body }
  })

beforeAll(async () => {
  gateway = await startGateway()
  account = await gateway.account({ credit: "1", scopes: ["chat", "monitoring"] })
  other = await gateway.account({ credit: "1", scopes: ["chat", "monitoring"] })
  for (const body of [{}, {}, { stream: true }]) {
    const answer = await chat(body)
    expect(answer.status).toBe(200)
    receipts.push(answer.headers.get("x-svc-receipt-id")!)
  }
  expect((await chat({ messages: "not a list" })).status).toBe(400)
  expect((await chat({ model: "svc/premier", max_completion_tokens: 200_000 })).status).toBe(402)
})
afterAll(() => gateway?.close())

describe("GET /v1/monitoring", () => {
  it("counts the account's calls, their errors by code, tokens and spend as the receipts say", async () => {
    const answer = await monitoring("?window=5m")
    expect(answer.status).toBe(200)
    const summary = answer.body
    expect(summary).toMatchObject({ object: "monitoring", account_id: account.id, window: "5m", requests: 5 })
    expect(summary.errors_by_code).toEqual({ invalid_request: 1, insufficient_funds: 1 })
    expect(summary.error_rate).toBe(0.4)
    expect(summary.server_error_rate).toBe(0)
    const billed = await Promise.all(receipts.map((id) => gateway.request("GET", `/v1/receipts/${id}`, {})))
    expect(usd(summary.spend_usd)).toBe(billed.reduce((total, receipt) => total + usd(receipt.body.cost.total_usd), 0n))
    expect(summary.tokens).toEqual({
      input: billed.reduce((total, receipt) => total + receipt.body.usage.input_tokens, 0),
      output: billed.reduce((total, receipt) => total + receipt.body.usage.output_tokens, 0)
    })
    expect(summary.latency_ms.p50).toBeGreaterThan(0)
    expect(summary.latency_ms.p99).toBeGreaterThanOrEqual(summary.latency_ms.p50)
    // One stream: its time to first byte is known, and no later than its whole answer could be.
    expect(summary.ttft_ms.p50).toBeGreaterThan(0)
    expect(summary.ttft_ms.p50).toBeLessThanOrEqual(summary.latency_ms.p99 * 1.2)
    // A point a minute (6 in a 5-minute window, counting the current minute), adding up to the totals.
    expect(summary.series.length).toBeGreaterThanOrEqual(5)
    expect(summary.series.length).toBeLessThanOrEqual(6)
    expect(summary.series.reduce((total: number, point: any) => total + point.requests, 0)).toBe(5)
    expect(summary.series.reduce((total: number, point: any) => total + point.errors, 0)).toBe(2)
    expect(summary.series.reduce((total: bigint, point: any) => total + usd(point.spend_usd), 0n)).toBe(usd(summary.spend_usd))
  })

  it("gives payment health from the balance and the window's burn rate", async () => {
    const { payment, spend_usd } = (await monitoring("?window=5m")).body
    expect(usd(payment.balance_usd)).toBe(usd("1") - usd(spend_usd))
    expect(payment.held_usd).toBe("0.000000000")
    expect(payment.available_usd).toBe(payment.balance_usd)
    // The window's spend per hour (5 minutes: times 12), and the hours what is left lasts at that rate.
    expect(usd(payment.burn_rate_usd_per_hour)).toBe(usd(spend_usd) * 12n)
    expect(payment.runway_hours).toBeCloseTo(Number(usd(payment.available_usd)) / Number(usd(payment.burn_rate_usd_per_hour)), 1)
    expect(payment.status).toBe(payment.runway_hours < 24 ? "low" : "ok")
    const idle = (await monitoring("", other.key)).body.payment
    expect(idle).toMatchObject({ balance_usd: "1.000000000", runway_hours: null, status: "ok" })
  })

  it("shows provider health by model to a customer key and by deployment to an admin key", async () => {
    const mine = (await monitoring()).body
    expect(mine.window).toBe("1h")
    expect(mine.providers.data.length).toBeGreaterThan(0)
    expect(mine.providers.deployments).toBeUndefined()
    expect(JSON.stringify(mine.providers)).not.toMatch(/"provider"|"upstream_model"|"id"/)
    const admin = await gateway.request("GET", `/v1/monitoring?accountId=${account.id}`, {})
    expect(admin.status).toBe(200)
    expect(admin.body.requests).toBe(5)
    expect(admin.body.providers.deployments.length).toBeGreaterThan(0)
  })

  it("counts calls, not reads, and keeps accounts apart", async () => {
    await monitoring()
    await gateway.request("GET", "/v1/logs", { key: account.key })
    expect((await monitoring("?window=30d")).body.requests).toBe(5)
    expect((await monitoring("", other.key)).body.requests).toBe(0)
    expect((await monitoring(`?accountId=${other.id}`)).status).toBe(403)
  })

  it("takes the contract's windows only", async () => {
    for (const window of ["5m", "15m", "1h", "6h", "24h", "7d", "30d"]) {
      expect((await monitoring(`?window=${window}`)).status).toBe(200)
    }
    for (const window of ["2h", "1d", "", "5M"]) {
      const answer = await monitoring(`?window=${window}`)
      expect(answer.status, window).toBe(400)
      expect(answer.body.error.param).toBe("window")
    }
  })
})
