/**
 * `GET /v1/logs` over HTTP: an account's events newest first, the type,
 * category, receipt and time filters, walking pages, the `accountId`
 * selector for customer and admin keys (and the same rule on receipts), and
 * the 400s of what cannot be read.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
let mine: { id: string; key: string }
let other: { id: string; key: string }
let receiptId: string
const MARKER = "zebra-marker-7731"

const logs = (query: string, key = mine.key) => gateway.request("GET", `/v1/logs${query}`, { key })

/** Every page of a query, walked with `limit`. */
const walk = async (query: string, limit: number, key = mine.key) => {
  const seen: Array<any> = []
  let cursor: string | null = null
  do {
    const separator = query === "" ? "?" : "&"
    const page = await logs(`${query}${separator}limit=${limit}${cursor === null ? "" : `&cursor=${cursor}`}`, key)
    expect(page.status).toBe(200)
    expect(page.body.data.length).toBeLessThanOrEqual(limit)
    seen.push(...page.body.data)
    expect(page.body.has_more).toBe(page.body.next_cursor !== null)
    cursor = page.body.next_cursor
  } while (cursor !== null)
  return seen
}

/**
 * Waits until the account's log lists `count` receipts: an event is listed once every older
 * transaction on the server has ended (docs/events.md), and other suites share the server.
 */
const untilReceiptsListed = async (key: string, count: number) => {
  for (let tries = 0; tries < 200; tries++) {
    const listed = (await logs("?type=receipt.created", key)).body.data
    if (listed.length >= count) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error("the receipts' events were never listed")
}

beforeAll(async () => {
  gateway = await startGateway()
  mine = await gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })
  other = await gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })
  const chat = (key: string) =>
    gateway.request("POST", "/v1/chat/completions", {
      key,
      body: { model: "svc/swift", messages: [{ role: "user", content: `hello ${MARKER}` }] }
    })
  const first = await chat(mine.key)
  expect(first.status).toBe(200)
  receiptId = first.headers.get("x-svc-receipt-id")!
  expect((await chat(mine.key)).status).toBe(200)
  expect((await chat(other.key)).status).toBe(200)
  await untilReceiptsListed(mine.key, 2)
  await untilReceiptsListed(other.key, 1)
})
afterAll(() => gateway?.close())

describe("GET /v1/logs", () => {
  it("lists the account's events newest first, as records without prompt text", async () => {
    const page = await logs("")
    expect(page.status).toBe(200)
    expect(page.body.object).toBe("list")
    expect(page.body.has_more).toBe(false)
    const events = page.body.data
    const types = new Set(events.map((event: any) => event.type))
    for (const type of ["account.created", "key.created", "payment.credit_added", "payment.reserved", "payment.settled", "receipt.created", "provider.route", "privacy.class_served"]) {
      expect(types).toContain(type)
    }
    for (const event of events) {
      expect(event).toMatchObject({ object: "event", account_id: mine.id })
      expect(event.id).toMatch(/^evt_/)
      expect(Number.isNaN(Date.parse(event.created_at))).toBe(false)
    }
    // The account came first, so its creation is the oldest event, listed last.
    expect(events.at(-1).type).toBe("account.created")
    expect(events.findIndex((event: any) => event.receipt_id === receiptId)).toBeGreaterThan(
      events.findIndex((event: any) => event.type === "receipt.created" && event.receipt_id !== receiptId)
    )
    expect(page.text).not.toContain(MARKER)
  })

  it("walks pages of any size to the same events in the same order, each once", async () => {
    const whole = (await logs("?limit=1000")).body.data.map((event: any) => event.id)
    expect(whole.length).toBeGreaterThan(8)
    for (const limit of [1, 3, 7]) {
      const walked = (await walk("", limit)).map((event) => event.id)
      expect(walked).toEqual(whole)
    }
  })

  it("filters by exact type, by category prefix, by receipt and by time", async () => {
    const all = (await logs("?limit=1000")).body.data
    const routes = (await logs("?type=provider.route")).body.data
    expect(routes.map((event: any) => event.id)).toEqual(all.filter((event: any) => event.type === "provider.route").map((event: any) => event.id))
    expect(routes.length).toBe(2)
    const payments = (await walk("?type=payment.", 2)).map((event) => event.id)
    expect(payments).toEqual(all.filter((event: any) => event.type.startsWith("payment.")).map((event: any) => event.id))
    const ofReceipt = (await logs(`?receiptId=${receiptId}`)).body.data
    expect(ofReceipt.length).toBeGreaterThan(1)
    expect(ofReceipt.every((event: any) => event.receipt_id === receiptId)).toBe(true)
    expect(ofReceipt.map((event: any) => event.type)).toContain("receipt.created")
    const oldest = all.at(-1).created_at
    const newest = all[0].created_at
    expect((await logs(`?to=${oldest}`)).body.data).toEqual([])
    const from = (await logs(`?from=${newest}&limit=1000`)).body.data
    expect(from.length).toBeGreaterThan(0)
    expect(from.every((event: any) => event.created_at >= newest)).toBe(true)
    expect((await logs(`?from=${encodeURIComponent("2000-01-01T00:00:00+02:00")}&limit=1000`)).body.data.length).toBe(all.length)
  })

  it("lets a key name its own account, refuses another (403) and lets an admin key name any", async () => {
    expect((await logs(`?accountId=${mine.id}`)).status).toBe(200)
    const refused = await logs(`?accountId=${other.id}`)
    expect(refused.status).toBe(403)
    expect(refused.body.error).toMatchObject({ code: "forbidden", param: "accountId" })
    expect((await logs("?accountId=acct_doesnotexist")).status).toBe(403)
    const asAdmin = await gateway.request("GET", `/v1/logs?accountId=${other.id}`, {})
    expect(asAdmin.status).toBe(200)
    expect(asAdmin.body.data.length).toBeGreaterThan(0)
    expect(asAdmin.body.data.every((event: any) => event.account_id === other.id)).toBe(true)
    const unnamed = await gateway.request("GET", "/v1/logs", {})
    expect(unnamed.status).toBe(400)
    expect(unnamed.body.error.param).toBe("accountId")
    expect((await gateway.request("GET", "/v1/logs?accountId=acct_doesnotexist", {})).status).toBe(404)
  })

  it("needs the monitoring scope", async () => {
    const chatOnly = await gateway.account({ credit: "1", scopes: ["chat"] })
    expect((await logs("", chatOnly.key)).status).toBe(401)
  })

  it("answers what it cannot read with a 400 naming the parameter, quoting little", async () => {
    for (
      const [query, param] of [
        ["?type=bogus", "type"],
        ["?type=payment", "type"],
        ["?type=" + "x".repeat(5000), "type"],
        ["?cursor=abc", "cursor"],
        ["?from=yesterday", "from"],
        ["?to=2026-13-45T00:00:00Z", "to"],
        ["?limit=0", "limit"],
        ["?limit=1001", "limit"],
        ["?receiptId=%20", "receiptId"],
        ["?accountId=me", "accountId"]
      ] as const
    ) {
      const answer = await logs(query)
      expect(answer.status, query).toBe(400)
      expect(answer.body.error.code).toBe("invalid_request")
      expect(JSON.stringify(answer.body.error), query).toContain(param)
      expect(answer.text.length).toBeLessThan(2000)
    }
  })
})

describe("receipts and the account selector", () => {
  it("gives an admin key any account's receipt, and a customer key only its own", async () => {
    expect((await gateway.request("GET", `/v1/receipts/${receiptId}`, { key: mine.key })).status).toBe(200)
    const admin = await gateway.request("GET", `/v1/receipts/${receiptId}`, {})
    expect(admin.status).toBe(200)
    expect(admin.body.account_id).toBe(mine.id)
    expect((await gateway.request("GET", `/v1/receipts/${receiptId}?accountId=${mine.id}`, {})).status).toBe(200)
    expect((await gateway.request("GET", `/v1/receipts/${receiptId}?accountId=${other.id}`, {})).status).toBe(404)
    expect((await gateway.request("GET", `/v1/receipts/${receiptId}`, { key: other.key })).status).toBe(404)
    expect((await gateway.request("GET", `/v1/receipts/${receiptId}?accountId=${mine.id}`, { key: other.key })).status).toBe(403)
    expect((await gateway.request("GET", `/v1/receipts/${receiptId}?accountId=${other.id}`, { key: other.key })).status).toBe(404)
  })
})

describe("GET /v1/key", () => {
  it("tells a key what it is: its id, account, scopes and limits; the operator key has no account", async () => {
    const own = await gateway.request("GET", "/v1/key", { key: mine.key })
    expect(own.status).toBe(200)
    expect(own.body).toMatchObject({ object: "key", account_id: mine.id, scopes: ["chat", "monitoring"], rpm: null, tpm: null })
    expect(own.body.id).toMatch(/^key_/)
    const operator = await gateway.request("GET", "/v1/key", {})
    expect(operator.body).toMatchObject({ object: "key", account_id: null, scopes: ["admin"] })
    expect((await gateway.request("GET", "/v1/key", { key: "svc_live_nope" })).status).toBe(401)
  })
})
