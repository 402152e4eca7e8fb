/**
 * Chat completions through the gateway to a fake OpenAI-compatible upstream
 * on a real socket, called with the official `openai` client: wire formats,
 * failures, cancellation, and that nothing a caller sees names the upstream.
 */
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { FAKE_FINGERPRINT, FAKE_PROVIDER_NAME, type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { describeResponse, recordingFetch } from "./support/recordingFetch.ts"

const UPSTREAM_KEY = "sk-upstream-secret-4711"
const PROVIDER_ID = "acme-hidden-provider"

let upstream: FakeOpenAi
let gateway: TestGateway
let client: OpenAI
let key: string
/** Every status line, header and body a caller received in this file, for the leak scan. */
const seen: Array<string> = []

beforeAll(async () => {
  upstream = await startFakeOpenAi()
  gateway = await startGateway({
    config: {
      // These tests fail the same deployment one after another: its circuit must not open (see health.test.ts).
      // Two attempts are enough to show a failed call's answer (retries have their own tests in routing.test.ts).
      routing: { health: { failureThreshold: 1000 }, retry: { maxAttempts: 2 } },
      models: [{
        id: "svc/acme-large",
        context: 128000,
        pricing: { input: "0.50", output: "1.50" },
        modalities: ["text"],
        capabilities: ["chat", "streaming", "tools", "structured_output"]
      }],
      providers: [
        {
          id: PROVIDER_ID,
          plugin: "openai-compatible",
          baseUrl: upstream.baseUrl,
          apiKeyEnv: "ACME_KEY",
          timeoutMs: 1500,
          deployments: [
            { model: "svc/acme-large", upstreamModel: "acme-large-v7", cost: { input: "0.40", output: "1.20" } },
            { model: "svc/pro", upstreamModel: "acme-pro-2" }
          ]
        },
        {
          id: "gone",
          plugin: "openai-compatible",
          baseUrl: "http://127.0.0.1:9/v1",
          deployments: [{ model: "svc/swift", upstreamModel: "swift-on-a-closed-port" }]
        }
      ]
    },
    env: { ACME_KEY: UPSTREAM_KEY }
  })
  key = (await gateway.account()).key
  client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0, fetch: recordingFetch(seen) })
})
afterAll(async () => {
  await gateway?.close()
  await upstream?.close()
})
beforeEach(() => upstream.behave({}))

const post = async (body: unknown) => {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  seen.push(describeResponse(response, text))
  return { response, text, body: text.startsWith("{") ? JSON.parse(text) : undefined }
}

describe("chat completions through an OpenAI-compatible upstream", () => {
  it("forwards the request under the upstream's model name and answers under ours", async () => {
    const completion = await client.chat.completions.create({
      model: "svc/acme-large",
      messages: [{ role: "system", content: "Be brief" }, { role: "user", content: "ping 42" }],
      temperature: 0.3,
      top_p: 0.9,
      seed: 7,
      max_tokens: 50,
      // @ts-expect-error: extensions and parameters the SDK does not know are sent as they are
      models: ["svc/pro"],
      route: "fallback",
      privacy: { class: "standard_route" },
      top_k: 40
    })
    expect(completion.model).toBe("svc/acme-large")
    expect(completion.id).toMatch(/^chatcmpl-/)
    expect(completion.choices[0]!.message.content).toContain("ping 42")
    const sent = upstream.requests.at(-1)!
    expect(sent.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`)
    expect(sent.body.model).toBe("acme-large-v7")
    expect(sent.body).toMatchObject({ temperature: 0.3, top_p: 0.9, seed: 7, max_tokens: 50, top_k: 40 })
    expect(sent.body).not.toHaveProperty("models")
    expect(sent.body).not.toHaveProperty("route")
    expect(sent.body).not.toHaveProperty("privacy")
    expect(sent.body.messages).toEqual([{ role: "system", content: "Be brief" }, { role: "user", content: "ping 42" }])
  })

  it("streams through the client, with usage when asked", async () => {
    const stream = await client.chat.completions.create({
      model: "svc/acme-large",
      messages: [{ role: "user", content: "stream me" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let usage: OpenAI.CompletionUsage | null | undefined
    const ids = new Set<string>()
    for await (const chunk of stream) {
      ids.add(chunk.id)
      expect(chunk.model).toBe("svc/acme-large")
      text += chunk.choices[0]?.delta.content ?? ""
      usage = chunk.usage ?? usage
    }
    expect(text).toContain("stream me")
    expect(ids.size).toBe(1)
    expect(usage!.total_tokens).toBeGreaterThan(0)
    expect(upstream.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true })
  })

  it("passes tools and json_schema through and returns what the upstream produced", async () => {
    const tools = [{
      type: "function" as const,
      function: { name: "lookup", parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] } }
    }]
    const withTools = await client.chat.completions.create({
      model: "svc/acme-large",
      messages: [{ role: "user", content: "find it" }],
      tools,
      tool_choice: "auto"
    })
    expect(withTools.choices[0]!.finish_reason).toBe("tool_calls")
    const call = withTools.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall
    expect(call.function.name).toBe("lookup")
    expect(JSON.parse(call.function.arguments)).toHaveProperty("q")
    expect(upstream.requests.at(-1)!.body.tools).toEqual(tools)

    const schema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] }
    const structured = await client.chat.completions.create({
      model: "svc/acme-large",
      messages: [{ role: "user", content: "structured" }],
      response_format: { type: "json_schema", json_schema: { name: "a", schema } }
    })
    expect(JSON.parse(structured.choices[0]!.message.content!)).toHaveProperty("answer")
    expect(upstream.requests.at(-1)!.body.response_format.json_schema.schema).toEqual(schema)
  })

  it("turns an upstream 5xx into 502 upstream_error", async () => {
    upstream.behave({ status: 500 })
    const { body, response } = await post({ model: "svc/acme-large", messages: [{ role: "user", content: "x" }] })
    expect(response.status).toBe(502)
    expect(body.error.code).toBe("upstream_error")
  })

  it("turns an upstream refusal of the request into 400", async () => {
    upstream.behave({ status: 400, errorBody: { error: { message: "acme-large-v7 rejects this" } } })
    const { body, response } = await post({ model: "svc/acme-large", messages: [{ role: "user", content: "x" }] })
    expect(response.status).toBe(400)
    expect(body.error.code).toBe("invalid_request")
  })

  it("turns an upstream that does not answer in time into 504 upstream_timeout", async () => {
    upstream.behave({ delayHeadersMs: 4000 })
    const { body, response } = await post({ model: "svc/acme-large", messages: [{ role: "user", content: "x" }] })
    expect(response.status).toBe(504)
    expect(body.error.code).toBe("upstream_timeout")
  })

  it("turns an unreachable upstream into 502, for JSON and for streams", async () => {
    const json = await post({ model: "svc/swift", messages: [{ role: "user", content: "x" }] })
    expect(json.response.status).toBe(502)
    const stream = await post({ model: "svc/swift", messages: [{ role: "user", content: "x" }], stream: true })
    expect(stream.response.status).toBe(502)
    expect(stream.body.error.code).toBe("upstream_error")
  })

  it("ends a stream that breaks after the first byte with an error frame the client raises", async () => {
    upstream.behave({ hangAfterChunks: 2 })
    const stream = await client.chat.completions.create({
      model: "svc/acme-large",
      messages: [{ role: "user", content: "break" }],
      stream: true
    })
    const received: Array<unknown> = []
    await expect(async () => {
      for await (const chunk of stream) received.push(chunk)
    }).rejects.toThrow(/did not answer in time/)
    expect(received.length).toBe(2)
  })

  it("cancels the upstream request when the client goes away mid-stream", async () => {
    upstream.behave({ chunkDelayMs: 300 })
    const before = upstream.clientAborts()
    const controller = new AbortController()
    const stream = await client.chat.completions.create(
      { model: "svc/acme-large", messages: [{ role: "user", content: "a long answer please" }], stream: true },
      { signal: controller.signal }
    )
    let chunks = 0
    // The SDK ends the iteration quietly when its signal aborts.
    for await (const _ of stream) {
      chunks += 1
      controller.abort()
    }
    expect(chunks).toBe(1)
    await upstream.waitForAborts(before + 1)
    expect(upstream.clientAborts()).toBe(before + 1)
  })

  it("never names the upstream: no provider id, upstream model, address or key in anything a caller saw", () => {
    const host = new URL(upstream.baseUrl).host
    const secrets = [PROVIDER_ID, "acme-large-v7", "acme-pro-2", "swift-on-a-closed-port", host, "127.0.0.1:9", UPSTREAM_KEY, FAKE_PROVIDER_NAME, FAKE_FINGERPRINT]
    expect(seen.length).toBeGreaterThan(10)
    for (const response of seen) {
      for (const secret of secrets) expect(response).not.toContain(secret)
    }
  })
})
