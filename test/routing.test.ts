/**
 * Routing through the real server: deployments that fail in scripted ways
 * (500, 429 + Retry-After, timeout, reset, reset mid-stream, malformed frame,
 * slow drip) on fake OpenAI-compatible upstreams over real sockets; which
 * route served, how many attempts, one receipt per success and none per
 * failure; `models` fallback and `route`; router modes; eligibility; and that
 * nothing a caller sees names a provider. Money invariants after every test.
 */
import OpenAI from "openai"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type FakeAnthropic, startFakeAnthropic } from "./support/fakeAnthropicUpstream.ts"
import { type FakeGemini, startFakeGemini } from "./support/fakeGeminiUpstream.ts"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { describeResponse } from "./support/recordingFetch.ts"
import { moneyViolations } from "./support/invariants.ts"

const PROVIDERS = ["route-primary", "route-backup", "route-other", "route-cooler", "route-messages", "route-generate"] as const
const UPSTREAM_KEY = "sk-route-secret-8812"

let primary: FakeOpenAi
let backup: FakeOpenAi
let other: FakeOpenAi
let cooler: FakeOpenAi
let anthropic: FakeAnthropic
let gemini: FakeGemini
let gateway: TestGateway
/** Every status line, header and body a caller received, for the leak scan at the end. */
const seen: Array<string> = []

beforeAll(async () => {
  ;[primary, backup, other, cooler] = await Promise.all([
    startFakeOpenAi(),
    startFakeOpenAi(),
    startFakeOpenAi(),
    startFakeOpenAi()
  ])
  ;[anthropic, gemini] = await Promise.all([startFakeAnthropic(), startFakeGemini()])
  const provider = (id: string, upstream: FakeOpenAi, deployments: Array<unknown>) => ({
    id,
    plugin: "openai-compatible",
    baseUrl: upstream.baseUrl,
    apiKeyEnv: "ROUTE_KEY",
    timeoutMs: 400,
    deployments
  })
  gateway = await startGateway({
    config: {
      // Failures in one test must not open circuits for the next: the breaker has its own tests.
      routing: { health: { failureThreshold: 1000, cooldownSeconds: 30, syncMillis: 100 } },
      models: [
        {
          id: "svc/alpha",
          context: 32000,
          pricing: { input: "1.00", output: "2.00" },
          modalities: ["text"],
          capabilities: ["chat", "streaming", "tools"],
          quality: 0.6
        },
        {
          id: "svc/beta",
          context: 32000,
          pricing: { input: "2.00", output: "4.00" },
          modalities: ["text"],
          capabilities: ["chat", "streaming"],
          quality: 0.9
        },
        {
          id: "svc/narrow",
          context: 60,
          pricing: { input: "0.01", output: "0.02" },
          modalities: ["text"],
          capabilities: ["chat"],
          quality: 0.3
        },
        ...["svc/gamma", "svc/delta", "svc/cool", "svc/mixed"].map((id) => ({
          id,
          context: 32000,
          pricing: { input: "1.00", output: "2.00" },
          modalities: ["text"],
          capabilities: ["chat", "streaming"],
          quality: 0.5
        }))
      ],
      providers: [
        { id: "sandbox", plugin: "sandbox", deployments: [{ model: "svc/swift" }, { model: "svc/premier" }] },
        // The primary is the cheaper upstream of svc/alpha, so it is always tried first.
        provider(PROVIDERS[0], primary, [{ model: "svc/alpha", upstreamModel: "alpha-upstream-7b", cost: { input: "0.40", output: "0.80" } }]),
        provider(PROVIDERS[1], backup, [
          { model: "svc/alpha", upstreamModel: "alpha-upstream-backup", cost: { input: "0.50", output: "1.00" } },
          { model: "svc/cool", upstreamModel: "cool-upstream-backup", cost: { input: "0.50", output: "1.00" } }
        ]),
        provider(PROVIDERS[2], other, [
          { model: "svc/beta", upstreamModel: "beta-upstream-xl", cost: { input: "1.00", output: "2.00" } },
          { model: "svc/narrow", upstreamModel: "narrow-upstream", cost: { input: "0.001", output: "0.002" } },
          { model: "svc/gamma", upstreamModel: "gamma-upstream" },
          { model: "svc/delta", upstreamModel: "delta-upstream" }
        ]),
        provider(PROVIDERS[3], cooler, [{ model: "svc/cool", upstreamModel: "cool-upstream-cheap", cost: { input: "0.40", output: "0.80" } }]),
        // One model on two wire formats: the Anthropic-speaking route is cheaper, so it is tried first.
        {
          ...provider(PROVIDERS[4], primary, [{ model: "svc/mixed", upstreamModel: "mixed-upstream-messages", cost: { input: "0.30", output: "0.60" } }]),
          plugin: "anthropic",
          baseUrl: anthropic.baseUrl
        },
        {
          ...provider(PROVIDERS[5], primary, [{ model: "svc/mixed", upstreamModel: "mixed-upstream-generate", cost: { input: "0.60", output: "1.20" } }]),
          plugin: "gemini",
          baseUrl: gemini.baseUrl
        }
      ]
    },
    env: { ROUTE_KEY: UPSTREAM_KEY }
  })
})
afterEach(async () => {
  for (const upstream of [primary, backup, other, cooler]) upstream.behave({})
  anthropic.behave({})
  gemini.behave({})
  expect(await moneyViolations(gateway.query)).toEqual([])
})
afterAll(async () => {
  await gateway?.close()
  await Promise.all([primary, backup, other, cooler, anthropic, gemini].map((upstream) => upstream?.close()))
})

/** A fresh account per test: its own receipts and events. */
const account = () => gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })

const chat = async (key: string, body: Record<string, unknown>) => {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  seen.push(describeResponse(response, text))
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, headers: response.headers, body: json, text }
}

const hello = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "route me somewhere" }],
  ...extra
})

const receiptOf = async (key: string, id: string | null) =>
  (await gateway.request("GET", `/v1/receipts/${id}`, { key })).body

const receiptsOf = (accountId: string) =>
  gateway.query<{ id: string; model: string; attempts: Array<any> }>(
    "SELECT id, model, attempts FROM receipts WHERE account_id = $1",
    [accountId]
  )

const eventsOf = (accountId: string) =>
  gateway.query<{ type: string; data: any }>(
    "SELECT type, data FROM event_log WHERE account_id = $1 AND type LIKE 'provider.%' ORDER BY (data->>'attempt')::int, type DESC",
    [accountId]
  )

const requestsTo = (upstream: FakeOpenAi) => upstream.requests.length

describe("failover between deployments", () => {
  it("moves to the next deployment when one answers 500, and bills once", async () => {
    const { id, key } = await account()
    const before = [requestsTo(primary), requestsTo(backup)]
    primary.behaveOnce({ status: 500 })
    const response = await chat(key, hello("svc/alpha"))
    expect(response.status).toBe(200)
    expect(response.body.model).toBe("svc/alpha")
    expect([requestsTo(primary) - before[0]!, requestsTo(backup) - before[1]!]).toEqual([1, 1])
    expect(backup.requests.at(-1)!.body.model).toBe("alpha-upstream-backup")

    const receipt = await receiptOf(key, response.headers.get("x-svc-receipt-id"))
    expect(receipt.attempts.map((attempt: any) => attempt.outcome)).toEqual(["error", "ok"])
    expect(await receiptsOf(id)).toHaveLength(1)
    const events = await eventsOf(id)
    expect(events.map((event) => event.type)).toEqual(["provider.route", "provider.route", "provider.fallback"])
    expect(events[0]!.data).toMatchObject({ model: "svc/alpha", attempt: 1, reason: "requested model", outcome: "error" })
    expect(events[2]!.data).toMatchObject({ from_model: "svc/alpha", to_model: "svc/alpha", attempt: 2, reason: "status 500" })
  })

  it("moves on at once on a connection reset and on a timeout", async () => {
    const { key } = await account()
    primary.behaveOnce({ resetBeforeHeaders: true })
    const reset = await chat(key, hello("svc/alpha"))
    expect(reset.status).toBe(200)
    const resetReceipt = await receiptOf(key, reset.headers.get("x-svc-receipt-id"))
    expect(resetReceipt.attempts.map((attempt: any) => attempt.outcome)).toEqual(["error", "ok"])

    primary.behaveOnce({ delayHeadersMs: 1500 })
    const slow = await chat(key, hello("svc/alpha"))
    expect(slow.status).toBe(200)
    const slowReceipt = await receiptOf(key, slow.headers.get("x-svc-receipt-id"))
    expect(slowReceipt.attempts.map((attempt: any) => attempt.outcome)).toEqual(["timeout", "ok"])
  })

  it("honours a 429's Retry-After: the deployment is left alone while it cools down", async () => {
    const { key } = await account()
    cooler.behave({ status: 429, retryAfter: 30 })
    const first = await chat(key, hello("svc/cool"))
    expect(first.status).toBe(200)
    expect(requestsTo(cooler)).toBe(1)
    const second = await chat(key, hello("svc/cool"))
    expect(second.status).toBe(200)
    expect(requestsTo(cooler)).toBe(1)
    const receipt = await receiptOf(key, second.headers.get("x-svc-receipt-id"))
    expect(receipt.attempts.map((attempt: any) => attempt.outcome)).toEqual(["ok"])
  })

  it("does not retry a request the upstream refused as bad (400)", async () => {
    const { id, key } = await account()
    const before = [requestsTo(primary), requestsTo(backup)]
    other.behaveOnce({ status: 400 })
    const response = await chat(key, hello("svc/beta", { models: ["svc/alpha"] }))
    expect(response.status).toBe(400)
    expect(response.body.error.code).toBe("invalid_request")
    expect([requestsTo(primary), requestsTo(backup)]).toEqual(before)
    expect(await receiptsOf(id)).toEqual([])
  })

  it("answers 502 when every route fails, bills nothing, and still records the attempts", async () => {
    const { id, key } = await account()
    other.behave({ status: 503 })
    const response = await chat(key, hello("svc/gamma"))
    expect(response.status).toBe(502)
    expect(response.body.error.code).toBe("upstream_error")
    expect(await receiptsOf(id)).toEqual([])
    const routes = (await eventsOf(id)).filter((event) => event.type === "provider.route")
    expect(routes.length).toBeGreaterThanOrEqual(2)
    expect(routes.every((event) => event.data.model === "svc/gamma")).toBe(true)
  })

  it("answers 504 when every route timed out", async () => {
    const { id, key } = await account()
    other.behave({ delayHeadersMs: 1500 })
    const response = await chat(key, hello("svc/delta"))
    expect(response.status).toBe(504)
    expect(response.body.error.code).toBe("upstream_timeout")
    expect(await receiptsOf(id)).toEqual([])
  })
})

describe("failover across wire formats", () => {
  it("moves from an Anthropic-speaking route to a Gemini-speaking one, for JSON and streams", async () => {
    const { id, key } = await account()
    anthropic.behave({ status: 529 })
    const json = await chat(key, hello("svc/mixed"))
    expect(json.status).toBe(200)
    expect(json.body.choices[0].message.content.length).toBeGreaterThan(0)
    const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    anthropic.behave({ resetBeforeHeaders: true })
    const stream = await client.chat.completions.create({ ...hello("svc/mixed"), stream: true } as any) as any
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    expect(text.length).toBeGreaterThan(0)
    const receipts = await receiptsOf(id)
    expect(receipts.map((receipt) => receipt.attempts.map((attempt: any) => attempt.outcome))).toEqual([["error", "ok"], ["error", "ok"]])
    expect(anthropic.requests.length).toBeGreaterThanOrEqual(2)
    expect(gemini.requests.length).toBe(2)
  })
})

describe("streams", () => {
  const streamed = async (key: string, model: string) => {
    const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: "user", content: "stream me a few words please" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let usage: OpenAI.CompletionUsage | undefined
    let error: unknown
    try {
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? ""
        usage = chunk.usage ?? usage
      }
    } catch (caught) {
      error = caught
    }
    return { text, usage, error }
  }

  it("fails over before the first byte: a reset or a malformed first frame is invisible", async () => {
    const { id, key } = await account()
    const expected = await streamed(key, "svc/alpha")
    primary.behaveOnce({ resetAfterChunks: 0 })
    const afterReset = await streamed(key, "svc/alpha")
    primary.behaveOnce({ malformedFrameAfter: 0 })
    const afterMalformed = await streamed(key, "svc/alpha")
    for (const result of [afterReset, afterMalformed]) {
      expect(result.error).toBeUndefined()
      expect(result.text).toBe(expected.text)
      expect(result.usage).toEqual(expected.usage)
    }
    const receipts = await receiptsOf(id)
    expect(receipts.map((receipt) => receipt.attempts.length).sort()).toEqual([1, 2, 2])
  })

  it("after the first byte, a failure ends the stream with an error and bills what was delivered", async () => {
    const { id, key } = await account()
    const before = requestsTo(backup)
    primary.behaveOnce({ resetAfterChunks: 2 })
    const result = await streamed(key, "svc/alpha")
    expect(result.error).toBeDefined()
    expect(result.text.length).toBeGreaterThan(0)
    expect(requestsTo(backup)).toBe(before)
    const [receipt] = await receiptsOf(id)
    expect(receipt!.attempts.map((attempt) => attempt.outcome)).toEqual(["error"])
  })

  it("streams a slow drip to the end", async () => {
    const { key } = await account()
    // Within the attempt's timeoutMs (400 ms), which covers the whole stream (test/deadlines.test.ts cuts one that does not).
    primary.behaveOnce({ chunkDelayMs: 30 })
    const result = await streamed(key, "svc/alpha")
    expect(result.error).toBeUndefined()
    expect(result.usage?.completion_tokens).toBeGreaterThan(0)
  })
})

describe("models and route", () => {
  it("falls back along `models` when the first model's routes all fail", async () => {
    const { id, key } = await account()
    other.behave({ status: 500 })
    const response = await chat(key, hello("svc/beta", { models: ["svc/alpha"] }))
    expect(response.status).toBe(200)
    expect(response.body.model).toBe("svc/alpha")
    const [receipt] = await receiptsOf(id)
    expect(receipt!.model).toBe("svc/alpha")
    const fallbacks = (await eventsOf(id)).filter((event) => event.type === "provider.fallback")
    expect(fallbacks.at(-1)!.data).toMatchObject({ from_model: "svc/beta", to_model: "svc/alpha" })
  })

  it("`route: auto` lets the router choose among the listed models", async () => {
    const { key } = await account()
    // A simple request leans to cost: alpha is the cheaper of the two.
    const auto = await chat(key, hello("svc/beta", { models: ["svc/alpha"], route: "auto" }))
    expect(auto.body.model).toBe("svc/alpha")
    const fallback = await chat(key, hello("svc/beta", { models: ["svc/alpha"], route: "fallback" }))
    expect(fallback.body.model).toBe("svc/beta")
  })

  it("router modes as the model: cheapest, best, and only models that can serve the request", async () => {
    const { key } = await account()
    expect((await chat(key, hello("cheapest"))).body.model).toBe("svc/narrow")
    expect((await chat(key, hello("best"))).body.model).toBe("svc/premier")
    const tool = { type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }
    expect((await chat(key, hello("best", { tools: [tool] }))).body.model).toBe("svc/alpha")
    expect((await chat(key, hello("cheapest", { models: ["svc/beta", "svc/alpha"] }))).body.model).toBe("svc/alpha")
  })
})

describe("eligibility", () => {
  it("refuses a request no asked model can serve, naming why", async () => {
    const { id, key } = await account()
    const tool = { type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }
    const noTools = await chat(key, hello("svc/beta", { tools: [tool] }))
    expect(noTools.status).toBe(400)
    expect(noTools.body.error).toMatchObject({ code: "invalid_request", param: "tools" })
    expect(noTools.body.error.message).toContain("tools")

    const image = {
      model: "svc/alpha",
      messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] }]
    }
    const noVision = await chat(key, image)
    expect(noVision.body.error).toMatchObject({ code: "invalid_request", param: "messages" })

    const long = await chat(key, hello("svc/narrow", { messages: [{ role: "user", content: "word ".repeat(200) }] }))
    expect(long.status).toBe(400)
    expect(long.body.error.code).toBe("context_length_exceeded")

    // With a fallback that fits, the long request goes there instead.
    const fits = await chat(key, hello("svc/narrow", { models: ["svc/alpha"], messages: [{ role: "user", content: "word ".repeat(200) }] }))
    expect(fits.body.model).toBe("svc/alpha")

    const unknown = await chat(key, hello("svc/alpha", { models: ["svc/nope"] }))
    expect(unknown.body.error).toMatchObject({ code: "invalid_request", param: "models" })
    expect((await receiptsOf(id)).map((receipt) => receipt.model)).toEqual(["svc/alpha"])
  })
})

describe("what callers see", () => {
  it("never names a provider, an upstream model, a base URL or a key", async () => {
    expect(seen.length).toBeGreaterThan(10)
    const leaks = [
      ...PROVIDERS,
      UPSTREAM_KEY,
      "alpha-upstream",
      "beta-upstream",
      "narrow-upstream",
      "gamma-upstream",
      "delta-upstream",
      "cool-upstream",
      "mixed-upstream",
      ...[primary, backup, other, cooler, anthropic, gemini].map((upstream) => new URL(upstream.baseUrl).host)
    ]
    for (const text of seen) for (const leak of leaks) expect(text).not.toContain(leak)
  })
})
