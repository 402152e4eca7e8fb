/**
 * Chat completions through the gateway to a fake Gemini API on a real socket,
 * called with the official `openai` client: the caller speaks OpenAI's format
 * unchanged, and nothing it sees names the upstream.
 */
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { FAKE_MODEL_VERSION_SUFFIX, FAKE_RESPONSE_ID, type FakeGemini, startFakeGemini } from "./support/fakeGeminiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { recordingFetch } from "./support/recordingFetch.ts"

const UPSTREAM_KEY = "AIza-upstream-secret-8812"
const PROVIDER_ID = "hidden-gemini-provider"
const UPSTREAM_MODEL = "gemini-secret-9-pro"
const MODEL = "svc/gemini-like"

let upstream: FakeGemini
let gateway: TestGateway
let client: OpenAI
/** Every status line, header and body a caller received in this file, for the leak scan. */
const seen: Array<string> = []

beforeAll(async () => {
  upstream = await startFakeGemini()
  gateway = await startGateway({
    config: {
      models: [{
        id: MODEL,
        context: 1_000_000,
        pricing: { input: "0.30", output: "2.50" },
        modalities: ["text", "image"],
        capabilities: ["chat", "streaming", "tools", "structured_output"]
      }],
      providers: [{
        id: PROVIDER_ID,
        plugin: "gemini",
        baseUrl: upstream.baseUrl,
        apiKeyEnv: "GEMINI_TEST_KEY",
        timeoutMs: 1500,
        deployments: [{ model: MODEL, upstreamModel: UPSTREAM_MODEL, cost: { input: "0.25", output: "2.00" } }]
      }]
    },
    env: { GEMINI_TEST_KEY: UPSTREAM_KEY }
  })
  const { key } = await gateway.account()
  client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0, fetch: recordingFetch(seen) })
})
afterAll(async () => {
  await gateway?.close()
  await upstream?.close()
})
beforeEach(() => upstream.behave({}))

const weather = {
  type: "function" as const,
  function: {
    name: "weather",
    description: "Weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false }
  }
}

describe("chat completions through a Gemini upstream", () => {
  it("answers a normal completion under our model name", async () => {
    const completion = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "system", content: "Be brief" }, { role: "user", content: "ping 42" }],
      temperature: 0.3,
      max_tokens: 50
    })
    expect(completion.model).toBe(MODEL)
    expect(completion.id).toMatch(/^chatcmpl-/)
    expect(completion.choices[0]!.message.content).toBe("ping 42")
    expect(completion.choices[0]!.finish_reason).toBe("stop")
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens)
    const sent = upstream.requests.at(-1)!
    expect(sent.path).toBe(`/v1beta/models/${UPSTREAM_MODEL}:generateContent`)
    expect(sent.headers["x-goog-api-key"]).toBe(UPSTREAM_KEY)
    expect(sent.body).toEqual({
      systemInstruction: { parts: [{ text: "Be brief" }] },
      contents: [{ role: "user", parts: [{ text: "ping 42" }] }],
      generationConfig: { temperature: 0.3, maxOutputTokens: 50 }
    })
  })

  it("streams unchanged, with the usage chunk only when asked", async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "stream me a few words" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let usage: OpenAI.CompletionUsage | null | undefined
    let finish: string | null = null
    const ids = new Set<string>()
    let chunks = 0
    for await (const chunk of stream) {
      chunks += 1
      ids.add(chunk.id)
      expect(chunk.model).toBe(MODEL)
      text += chunk.choices[0]?.delta.content ?? ""
      finish = chunk.choices[0]?.finish_reason ?? finish
      if (chunk.usage) {
        expect(chunk.choices).toEqual([])
        usage = chunk.usage
      }
    }
    expect(text).toBe("stream me a few words")
    expect(finish).toBe("stop")
    expect(chunks).toBe(6)
    expect(ids.size).toBe(1)
    expect(usage!.total_tokens).toBeGreaterThan(0)
    expect(upstream.requests.at(-1)!.path).toBe(`/v1beta/models/${UPSTREAM_MODEL}:streamGenerateContent?alt=sse`)

    const quiet = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "no usage please" }],
      stream: true
    })
    const received: Array<OpenAI.ChatCompletionChunk> = []
    for await (const chunk of quiet) received.push(chunk)
    expect(received.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("no usage please")
    expect(received.every((c) => c.choices.length === 1 && !c.usage)).toBe(true)
  })

  it("returns tool calls, and takes their results back", async () => {
    const called = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "weather in Paris?" }],
      tools: [weather],
      tool_choice: "auto"
    })
    expect(called.choices[0]!.finish_reason).toBe("tool_calls")
    const call = called.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall
    expect(call.function.name).toBe("weather")
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "text" })
    expect(upstream.requests.at(-1)!.body.tools[0].functionDeclarations[0].parameters).not.toHaveProperty("additionalProperties")

    const answered = await client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: "user", content: "weather in Paris?" },
        called.choices[0]!.message,
        { role: "tool", tool_call_id: call.id, content: "{\"celsius\":21}" }
      ],
      tools: [weather]
    })
    expect(answered.choices[0]!.message.content).toBe("weather said {\"celsius\":21}")
    expect(upstream.requests.at(-1)!.body.contents.at(-1)).toEqual({
      role: "user",
      parts: [{ functionResponse: { name: "weather", response: { celsius: 21 } } }]
    })

    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "weather in Paris?" }],
      tools: [weather],
      tool_choice: { type: "function", function: { name: "weather" } },
      stream: true
    })
    const deltas: Array<OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall> = []
    let finish: string | null = null
    for await (const chunk of stream) {
      deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? []))
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(deltas).toEqual([{ index: 0, id: "call_0", type: "function", function: { name: "weather", arguments: "{\"city\":\"text\"}" } }])
    expect(finish).toBe("tool_calls")
  })

  it("returns structured output for json_schema", async () => {
    const schema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"], additionalProperties: false }
    const structured = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "structured" }],
      response_format: { type: "json_schema", json_schema: { name: "a", schema, strict: true } }
    })
    expect(JSON.parse(structured.choices[0]!.message.content!)).toEqual({ answer: "text" })
  })

  it("ends a stream the upstream cut off without a finish reason with an error the client raises", async () => {
    upstream.behave({ noFinishReason: true })
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "cut me off" }],
      stream: true
    })
    const received: Array<unknown> = []
    await expect(async () => {
      for await (const chunk of stream) received.push(chunk)
    }).rejects.toThrow(/upstream failed/)
    expect(received.length).toBe(3)
  })

  it("never names the upstream: no provider id, upstream model, address or key in anything a caller saw", () => {
    const host = new URL(upstream.baseUrl).host
    const secrets = [PROVIDER_ID, UPSTREAM_MODEL, host, upstream.baseUrl, UPSTREAM_KEY, FAKE_RESPONSE_ID, FAKE_MODEL_VERSION_SUFFIX, "v1beta", "safetyRatings"]
    expect(seen.length).toBeGreaterThanOrEqual(7)
    for (const response of seen) {
      for (const secret of secrets) expect(response).not.toContain(secret)
    }
  })
})
