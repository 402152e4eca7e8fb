/**
 * `GET /v1/usage` over HTTP: totals that equal the receipts and the balance
 * drop, by privacy class, grouped by model, key and day, the calls a page at
 * a time (totals on the first page only), time ranges, the account selector
 * and the 400s.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fromNumericColumn as parseUsd } from "../services/Money.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
let account: { id: string; key: string; keyId: string }
let secondKey: { id: string; key: string }
let other: { id: string; key: string }
const receipts: Array<any> = []

const usage = (query: string, key = account.key) => gateway.request("GET", `/v1/usage${query}`, { key })

const chat = async (key: string, model: string) => {
  const answer = await gateway.request("POST", "/v1/chat/completions", {
    key,
    body: { model, messages: [{ role: "user", content: "Count to three." }] }
  })
  expect(answer.status).toBe(200)
  const receipt = await gateway.request("GET", `/v1/receipts/${answer.headers.get("x-svc-receipt-id")}`, {})
  expect(receipt.status).toBe(200)
  receipts.push(receipt.body)
}

/** Waits until the key's report lists `count` calls (a receipt is listed once every older transaction on the server has ended). */
const untilListed = async (count: number, key = account.key) => {
  for (let tries = 0; tries < 200; tries++) {
    if ((await usage("?limit=1000", key)).body.data.length >= count) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error("the calls were never listed")
}

const sum = (values: ReadonlyArray<string>) => values.reduce((total, value) => total + parseUsd(value), 0n)

beforeAll(async () => {
  gateway = await startGateway()
  account = await gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })
  other = await gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })
  const created = await gateway.request("POST", `/v1/admin/accounts/${account.id}/keys`, { body: { name: "second", scopes: ["chat"] } })
  secondKey = { id: created.body.id, key: created.body.key }
  await chat(account.key, "svc/swift")
  await chat(account.key, "svc/swift")
  await chat(account.key, "svc/pro")
  await chat(secondKey.key, "svc/swift")
  await chat(other.key, "svc/swift")
  await untilListed(4)
  await untilListed(1, other.key)
})
afterAll(() => gateway?.close())

describe("GET /v1/usage", () => {
  it("totals the account's billed calls as their receipts say, which is what the balance lost", async () => {
    const report = await usage("")
    expect(report.status).toBe(200)
    const mine = receipts.filter((receipt) => receipt.account_id === account.id)
    expect(report.body.totals).toMatchObject({
      requests: 4,
      input_tokens: mine.reduce((total, receipt) => total + receipt.usage.input_tokens, 0),
      output_tokens: mine.reduce((total, receipt) => total + receipt.usage.output_tokens, 0)
    })
    const spend = parseUsd(report.body.totals.spend_usd)
    expect(spend).toBe(sum(mine.map((receipt) => receipt.cost.total_usd)))
    const balance = (await gateway.request("GET", `/v1/admin/accounts/${account.id}`, {})).body.balance_usd
    expect(parseUsd("5") - parseUsd(balance)).toBe(spend)
    expect(report.body.totals.by_privacy_class).toEqual([
      { privacy_class: "standard_route", requests: 4, input_tokens: report.body.totals.input_tokens, output_tokens: report.body.totals.output_tokens, spend_usd: report.body.totals.spend_usd }
    ])
    expect(report.body.groups).toBeNull()
    expect(report.body.data.map((call: any) => call.receipt_id).sort()).toEqual(mine.map((receipt) => receipt.id).sort())
    const pro = report.body.data.find((call: any) => call.model === "svc/pro")
    const proReceipt = mine.find((receipt) => receipt.model === "svc/pro")
    expect(pro).toMatchObject({
      request_id: proReceipt.request_id,
      key_id: account.keyId,
      endpoint: "/v1/chat/completions",
      privacy_class: "standard_route",
      input_tokens: proReceipt.usage.input_tokens,
      output_tokens: proReceipt.usage.output_tokens,
      cost_usd: proReceipt.cost.total_usd
    })
  })

  it("groups by model, key and day, each summing to the totals", async () => {
    const totals = (await usage("")).body.totals
    for (const groupBy of ["model", "key", "day"]) {
      const { groups } = (await usage(`?group_by=${groupBy}`)).body
      expect(groups.reduce((total: number, group: any) => total + group.requests, 0)).toBe(totals.requests)
      expect(sum(groups.map((group: any) => group.spend_usd))).toBe(parseUsd(totals.spend_usd))
    }
    const byModel = (await usage("?group_by=model")).body.groups
    expect(Object.fromEntries(byModel.map((group: any) => [group.group, group.requests]))).toEqual({ "svc/swift": 3, "svc/pro": 1 })
    const byKey = (await usage("?group_by=key")).body.groups
    expect(Object.fromEntries(byKey.map((group: any) => [group.group, group.requests]))).toEqual({ [account.keyId]: 3, [secondKey.id]: 1 })
    const byDay = (await usage("?group_by=day")).body.groups
    expect(byDay.map((group: any) => group.group)).toEqual([receipts[0].created_at.slice(0, 10)])
  })

  it("pages the calls newest first, each once, with the totals on the first page only", async () => {
    const whole = (await usage("?limit=1000")).body.data.map((call: any) => call.receipt_id)
    const walked: Array<string> = []
    let cursor: string | null = null
    let pages = 0
    do {
      const page: any = (await usage(`?limit=1${cursor === null ? "" : `&cursor=${cursor}`}`)).body
      expect(page.totals === null).toBe(pages > 0)
      walked.push(...page.data.map((call: any) => call.receipt_id))
      cursor = page.next_cursor
      pages++
    } while (cursor !== null)
    expect(walked).toEqual(whole)
    expect(pages).toBe(4)
    // The last call listed first.
    expect(whole[0]).toBe(receipts.filter((receipt) => receipt.account_id === account.id).at(-1).id)
  })

  it("keeps to the time range asked for", async () => {
    const first = receipts[0].created_at
    expect((await usage(`?to=${first}`)).body.totals.requests).toBe(0)
    expect((await usage(`?from=${first}`)).body.totals.requests).toBe(4)
    expect((await usage("?from=2100-01-01T00:00:00Z")).body).toMatchObject({ totals: { requests: 0, spend_usd: "0.000000000" }, data: [] })
  })

  it("lets an admin key name any account and refuses another account to a customer key", async () => {
    expect((await usage(`?accountId=${other.id}`)).status).toBe(403)
    const asAdmin = await gateway.request("GET", `/v1/usage?accountId=${other.id}`, {})
    expect(asAdmin.status).toBe(200)
    expect(asAdmin.body.totals.requests).toBe(1)
  })

  it("answers what it cannot read with a 400 naming the parameter", async () => {
    for (const [query, param] of [["?group_by=week", "group_by"], ["?cursor=zzz", "cursor"], ["?from=now", "from"], ["?limit=-1", "limit"]] as const) {
      const answer = await usage(query)
      expect(answer.status, query).toBe(400)
      expect(JSON.stringify(answer.body.error)).toContain(param)
    }
  })
})
