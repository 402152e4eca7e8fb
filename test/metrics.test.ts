/**
 * `GET /metrics` over HTTP, read with a Prometheus text-format parser: the
 * request counter and latency histogram by route, method, status, model and
 * class (unknown paths as `unmatched`), upstream attempts by deployment,
 * rate-limit refusals, holds open and circuit states; admin keys only.
 */
// @ts-expect-error: the parser ships no types
import parsePrometheusTextFormat from "parse-prometheus-text-format"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

interface Family {
  readonly name: string
  readonly type: string
  readonly metrics: Array<{ labels?: Record<string, string>; value?: string; buckets?: Record<string, string>; count?: string }>
}

let gateway: TestGateway

let lastText = ""

const scrape = async (): Promise<Map<string, Family>> => {
  const answer = await fetch(`${gateway.url}/metrics`, { headers: { authorization: `Bearer ${gateway.adminKey}` } })
  expect(answer.status).toBe(200)
  expect(answer.headers.get("content-type")).toContain("text/plain")
  lastText = await answer.text()
  const families: Array<Family> = parsePrometheusTextFormat(lastText)
  return new Map(families.map((family) => [family.name, family]))
}

const sample = (family: Family | undefined, labels: Record<string, string>) =>
  family?.metrics.find((metric) => Object.entries(labels).every(([key, value]) => metric.labels?.[key] === value))

beforeAll(async () => {
  gateway = await startGateway()
})
afterAll(() => gateway?.close())

describe("GET /metrics", () => {
  it("counts requests by route, status, model and class, with their latency, and upstream attempts", async () => {
    const { key } = await gateway.account({ credit: "1", scopes: ["chat"] })
    const chat = await gateway.request("POST", "/v1/chat/completions", {
      key,
      body: { model: "svc/swift", messages: [{ role: "user", content: "hello" }] }
    })
    expect(chat.status).toBe(200)
    await gateway.request("GET", "/v1/receipts/rcpt_missing", { key })
    await gateway.request("GET", "/no/such/path/x1", { key })
    const families = await scrape()
    const requests = families.get("svc_http_requests_total")
    expect(requests?.type).toBe("COUNTER")
    expect(sample(requests, {
      route: "/v1/chat/completions",
      method: "POST",
      status: "200",
      model: "svc/swift",
      privacy_class: "standard_route"
    })?.value).toBe("1")
    expect(sample(requests, { route: "/v1/receipts/:id", status: "401" })).toBeDefined()
    expect(sample(requests, { route: "unmatched" })).toBeDefined()
    expect(JSON.stringify(requests)).not.toContain("x1")
    const duration = families.get("svc_http_request_duration_seconds")
    expect(duration?.type).toBe("HISTOGRAM")
    // The parser keeps a histogram's buckets but not its labels: its count line is read from the text.
    expect(lastText).toMatch(/^svc_http_request_duration_seconds_count\{route="\/v1\/chat\/completions",method="POST",status="200",[^}]*\} 1$/m)
    const attempts = families.get("svc_upstream_attempts_total")
    expect(attempts?.metrics.some((metric) => metric.labels?.outcome === "ok" && Number(metric.value) >= 1)).toBe(true)
    expect(sample(families.get("svc_holds_open"), {})?.value).toBe("0")
    expect(families.has("svc_circuit_state")).toBe(true)
    expect(families.has("svc_process_resident_memory_bytes")).toBe(true)
  })

  it("counts rate-limit refusals by limit", async () => {
    const account = await gateway.account({ credit: "1", scopes: ["chat"] })
    const limited = await gateway.request("POST", `/v1/admin/accounts/${account.id}/keys`, { body: { name: "slow", scopes: ["chat"], rpm: 1 } })
    const call = () =>
      gateway.request("POST", "/v1/chat/completions", {
        key: limited.body.key,
        body: { model: "svc/swift", messages: [{ role: "user", content: "hello" }] }
      })
    expect((await call()).status).toBe(200)
    expect((await call()).status).toBe(429)
    expect((await call()).status).toBe(429)
    expect(sample((await scrape()).get("svc_rate_limit_refusals_total"), { limit: "rpm" })?.value).toBe("2")
    // The event log is told once a minute per key, not once per refused call.
    // Polled: an event is listed once every older transaction on the server has ended (docs/events.md).
    const listed = async () =>
      (await gateway.request("GET", `/v1/logs?accountId=${account.id}&type=rate_limit.`, {})).body.data
        .map((event: any) => [event.type, event.data])
    await expect.poll(listed, { timeout: 10_000 }).toEqual([
      ["rate_limit.refused", { key_id: limited.body.id, limit: "rpm", retry_after_seconds: expect.any(Number) }]
    ])
  })

  it("answers admin keys only", async () => {
    const { key } = await gateway.account({ credit: "1", scopes: ["chat", "monitoring"] })
    expect((await gateway.request("GET", "/metrics", { key })).status).toBe(401)
    expect((await gateway.request("GET", "/metrics", { key: null })).status).toBe(401)
  })
})
