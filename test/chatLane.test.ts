/**
 * The chat lane (src/http/lane/) answers exactly as the API it stands in for:
 * the same call sent with a `content-length` (the lane takes it) and chunked
 * (the lane leaves it to the app) gets the same status, headers, error
 * envelope and shape of answer, for good calls, streams and every kind of
 * refusal the lane makes itself. Its calls' fibers tick none of Effect's
 * own fiber metrics.
 */
import { Effect, Metric } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
let key: string
let monitoringKey: string

beforeAll(async () => {
  gateway = await startGateway()
  key = (await gateway.account()).key
  monitoringKey = (await gateway.account({ scopes: ["monitoring"] })).key
}, 60_000)
afterAll(() => gateway?.close())

/** Sends `body` to chat completions, either whole (lane) or as a chunked stream (app). */
const send = async (body: string, chunked: boolean, headers: Record<string, string> = {}) => {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: chunked
      ? new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(body))
          controller.close()
        }
      })
      : body,
    ...(chunked ? { duplex: "half" } : {})
  } as RequestInit)
  const text = await response.text()
  const varying = new Set(["date", "content-length", "transfer-encoding", "x-request-id", "x-svc-receipt-id", "keep-alive", "connection"])
  const names = [...response.headers.keys()].filter((name) => !varying.has(name)).sort()
  return { status: response.status, names, text, requestId: response.headers.get("x-request-id") }
}

const both = async (body: string, headers: Record<string, string> = {}) => {
  const lane = await send(body, false, headers)
  const app = await send(body, true, headers)
  expect(lane.requestId).toMatch(/^req_/)
  expect(app.requestId).toMatch(/^req_/)
  expect(lane.status).toBe(app.status)
  expect(lane.names).toEqual(app.names)
  return { lane, app }
}

const auth = (token: string) => ({ authorization: `Bearer ${token}` })
const good = { model: "svc/swift", messages: [{ role: "user", content: "hello lane" }] }

describe("the chat lane", () => {
  it("answers a JSON call as the API does: headers, billing headers, the completion's shape", async () => {
    const { lane, app } = await both(JSON.stringify(good), auth(key))
    expect(lane.status).toBe(200)
    expect(lane.names).toEqual(expect.arrayContaining(["x-svc-total-usd", "x-svc-margin-usd", "x-svc-upstream-cost-usd", "content-type"]))
    const [a, b] = [JSON.parse(lane.text), JSON.parse(app.text)]
    expect(Object.keys(a).sort()).toEqual(Object.keys(b).sort())
    expect(a.choices[0].message.content).toBe(b.choices[0].message.content)
  })

  it("streams as the API does: the same headers and frames to [DONE]", async () => {
    const { lane, app } = await both(JSON.stringify({ ...good, stream: true }), auth(key))
    expect(lane.status).toBe(200)
    const frames = (text: string) => text.split("\n\n").filter(Boolean).map((frame) => frame.startsWith("data: {") ? "chunk" : frame)
    expect(frames(lane.text)).toEqual(frames(app.text))
    expect(lane.text.trimEnd().endsWith("data: [DONE]")).toBe(true)
  })

  it.each([
    ["no key", JSON.stringify(good), "nobody"],
    ["a key without the chat scope", JSON.stringify(good), "monitoring"],
    ["a body that is not JSON", "{\"model\": ", "chat"],
    ["a body that breaks the schema", JSON.stringify({ model: "svc/swift" }), "chat"],
    ["a message of the wrong type", JSON.stringify({ model: "svc/swift", messages: [{ role: "user", content: 5 }] }), "chat"],
    ["an unknown model", JSON.stringify({ ...good, model: "svc/nope" }), "chat"],
    ["an empty body", "", "chat"],
    ["an idempotency key over 255 characters", JSON.stringify(good), "chat", { "idempotency-key": "k".repeat(256) }]
  ] as Array<[string, string, string, Record<string, string>?]>)("refuses %s with the API's status and envelope", async (_, body, who, extra = {}) => {
    const token = who === "chat" ? key : who === "monitoring" ? monitoringKey : undefined
    const { lane, app } = await both(body, { ...(token === undefined ? {} : auth(token)), ...extra })
    expect(lane.status).toBeGreaterThanOrEqual(400)
    const [a, b] = [JSON.parse(lane.text).error, JSON.parse(app.text).error]
    expect({ ...a, request_id: null }).toEqual({ ...b, request_id: null })
    expect(a.request_id).toBe(lane.requestId)
  })

  it("runs its calls without Effect's fiber metrics: nothing reads them, and each fiber of each call paid for them", async () => {
    const started = () => Effect.runSync(Metric.value(Metric.fiberStarted)).count
    // Warm: the account's leases taken, so the calls below need no store operation of their own.
    await send(JSON.stringify(good), false, auth(key))
    const before = started()
    const calls = 40
    for (let i = 0; i < calls; i++) expect((await send(JSON.stringify(good), false, auth(key))).status).toBe(200)
    // Each call is a fiber at least; what the layers' own fibers start meanwhile (settlement turns) is far fewer.
    expect(started() - before).toBeLessThan(calls / 2)
  })
})
