/**
 * OpenTelemetry traces: with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at an
 * in-process OTLP/HTTP collector (127.0.0.1), each chat call is one trace —
 * the request's span with the call's stages under it — and two calls are two
 * traces; without it, nothing is sent.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
}

const spans: Array<Span> = []
let posts = 0
let collector: Server
let endpoint: string

beforeAll(async () => {
  collector = createServer((request, response) => {
    let body = ""
    request.on("data", (chunk) => (body += chunk))
    request.on("end", () => {
      if (request.url === "/v1/traces") {
        posts++
        const sent = JSON.parse(body)
        for (const resource of sent.resourceSpans ?? []) {
          for (const scope of resource.scopeSpans ?? []) spans.push(...scope.spans)
        }
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((listening) => collector.listen(0, "127.0.0.1", listening))
  endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((closed) => collector.close(() => closed())))

const chat = (gateway: TestGateway, key: string) =>
  gateway.request("POST", "/v1/chat/completions", {
    key,
    body: { model: "svc/swift", messages: [{ role: "user", content: "hello" }] }
  })

const STAGES = ["svc.admission", "svc.route_plan", "svc.billing.hold", "svc.upstream", "svc.billing.settle"]

describe("tracing", () => {
  it("exports one trace per call, with the call's stages as spans under its request", async () => {
    const gateway = await startGateway({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint } })
    const { key } = await gateway.account({ credit: "1", scopes: ["chat"] })
    const first = await chat(gateway, key)
    const second = await chat(gateway, key)
    expect([first.status, second.status]).toEqual([200, 200])
    await gateway.close()
    const traces = new Set(spans.filter((span) => span.name === "svc.upstream").map((span) => span.traceId))
    expect(traces.size).toBe(2)
    for (const traceId of traces) {
      const inTrace = spans.filter((span) => span.traceId === traceId)
      for (const stage of STAGES) expect(inTrace.map((span) => span.name)).toContain(stage)
      const roots = inTrace.filter((span) => !span.parentSpanId)
      expect(roots).toHaveLength(1)
      expect(roots[0]!.name).toMatch(/POST/)
      const ids = new Set(inTrace.map((span) => span.spanId))
      for (const span of inTrace) if (span.parentSpanId) expect(ids).toContain(span.parentSpanId)
    }
  })

  it("sends nothing without an endpoint", async () => {
    const before = posts
    const gateway = await startGateway()
    const { key } = await gateway.account({ credit: "1", scopes: ["chat"] })
    expect((await chat(gateway, key)).status).toBe(200)
    await gateway.close()
    expect(posts).toBe(before)
  })
})
