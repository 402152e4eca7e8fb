/** `Idempotency-Key`: a retry returns the first response and is billed once; misuse is a 409 that changes nothing. */
import { describe, expect, it } from "vitest"
import { billedSuite } from "./support/billedSuite.ts"

const suite = billedSuite((baseUrl) => ({
  providers: [
    { id: "sandbox", plugin: "sandbox", deployments: [{ model: "svc/swift" }] },
    { id: "slow", plugin: "openai-compatible", baseUrl, deployments: [{ model: "svc/pro" }] }
  ]
}))

const chat = (key: string, idempotencyKey: string, body: Record<string, unknown>) =>
  suite.gateway.request("POST", "/v1/chat/completions", { key, body, headers: { "idempotency-key": idempotencyKey } })

const receiptsOf = async (accountId: string) =>
  (await suite.gateway.query<{ n: number }>("SELECT count(*)::int AS n FROM receipts WHERE account_id = $1", [accountId]))[0]!.n

const hello = { model: "svc/swift", messages: [{ role: "user", content: "once only" }] }

describe("idempotency keys", () => {
  it("replays the first response, with the same receipt, and bills once", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    const first = await chat(account.key, "order-1", hello)
    const retry = await chat(account.key, "order-1", hello)
    expect(first.status).toBe(200)
    expect(retry.status).toBe(200)
    expect(retry.body).toEqual(first.body)
    expect(retry.headers.get("x-svc-receipt-id")).toBe(first.headers.get("x-svc-receipt-id"))
    expect(retry.headers.get("x-svc-total-usd")).toBe(first.headers.get("x-svc-total-usd"))
    expect(retry.headers.get("idempotent-replayed")).toBe("true")
    expect(await receiptsOf(account.id)).toBe(1)
  })

  it("refuses the same key with another body, changing nothing", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    await chat(account.key, "order-2", hello)
    const balance = (await suite.gateway.request("GET", `/v1/admin/accounts/${account.id}`)).body.balance_usd
    const other = await chat(account.key, "order-2", { ...hello, messages: [{ role: "user", content: "something else" }] })
    expect(other.status).toBe(409)
    expect(other.body.error).toMatchObject({ code: "idempotency_conflict", param: "Idempotency-Key" })
    expect((await suite.gateway.request("GET", `/v1/admin/accounts/${account.id}`)).body.balance_usd).toBe(balance)
    expect(await receiptsOf(account.id)).toBe(1)
  })

  it("never charges twice when retries race the first call", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    suite.upstream.behave({ delayHeadersMs: 300 })
    const body = { model: "svc/pro", max_tokens: 20, messages: [{ role: "user", content: "race" }] }
    const responses = await Promise.all(Array.from({ length: 8 }, () => chat(account.key, "order-3", body)))
    const statuses = responses.map((response) => response.status).sort()
    expect(statuses.filter((status) => status === 200).length).toBe(1)
    expect(statuses.every((status) => status === 200 || status === 409)).toBe(true)
    expect(await receiptsOf(account.id)).toBe(1)
    // Once the first has finished, a retry gets its response.
    const later = await chat(account.key, "order-3", body)
    expect(later.status).toBe(200)
    expect(later.headers.get("idempotent-replayed")).toBe("true")
  })

  it("lets a retry run again when the first attempt failed (nothing was billed)", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    suite.upstream.behave({ status: 500 })
    const body = { model: "svc/pro", messages: [{ role: "user", content: "flaky" }] }
    expect((await chat(account.key, "order-4", body)).status).toBe(502)
    suite.upstream.behave({})
    const retry = await chat(account.key, "order-4", body)
    expect(retry.status).toBe(200)
    expect(retry.headers.get("idempotent-replayed")).toBeNull()
    expect(await receiptsOf(account.id)).toBe(1)
  })

  it("keys are per account", async () => {
    const one = await suite.gateway.account({ credit: "1" })
    const two = await suite.gateway.account({ credit: "1" })
    const a = await chat(one.key, "shared-key", hello)
    const b = await chat(two.key, "shared-key", hello)
    expect(b.headers.get("x-svc-receipt-id")).not.toBe(a.headers.get("x-svc-receipt-id"))
  })

  it("replays a stream as the chunks the first caller received, billed once", async () => {
    const account = await suite.gateway.account({ credit: "1" })
    const body = { ...hello, stream: true }
    const first = await chat(account.key, "stream-1", body)
    expect(first.status).toBe(200)
    expect(first.text).toContain("data: [DONE]")
    const retry = await chat(account.key, "stream-1", body)
    expect(retry.status).toBe(200)
    expect(retry.headers.get("content-type")).toContain("text/event-stream")
    expect(retry.headers.get("idempotent-replayed")).toBe("true")
    expect(retry.headers.get("x-svc-receipt-id")).toBe(first.headers.get("x-svc-receipt-id"))
    expect(retry.text).toBe(first.text)
    expect(await receiptsOf(account.id)).toBe(1)
    // The same key for the non-streamed form of the request is another body.
    expect((await chat(account.key, "stream-1", hello)).status).toBe(409)
  })
})
