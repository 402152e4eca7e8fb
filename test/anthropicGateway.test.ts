/**
 * Chat completions through the gateway to a fake Anthropic Messages upstream
 * on a real socket, called with the official `openai` client unchanged:
 * completions, streams, tool calls and structured output look like any
 * OpenAI-style model's, and nothing a caller sees names the upstream.
 */
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import {
  FAKE_MESSAGE_ID,
  FAKE_REQUEST_ID,
  FAKE_SIGNATURE,
  FAKE_THINKING,
  FAKE_TOOL_USE_ID,
  type FakeAnthropic,
  startFakeAnthropic
} from "./support/fakeAnthropicUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { describeResponse, recordingFetch } from "./support/recordingFetch.ts"

const UPSTREAM_KEY = "sk-ant-upstream-secret-0815"
const PROVIDER_ID = "hidden-anthropic-provider"
const UPSTREAM_MODEL = "claude-fake-sonnet-9"
const MODEL = "svc/claude-like"

let upstream: FakeAnthropic
let gateway: TestGateway
let client: OpenAI
let key: string
/** Every status line, header and body a caller received in this file, for the leak scan. */
const seen: Array<string> = []

beforeAll(async () => {
  upstream = await startFakeAnthropic()
  gateway = await startGateway({
    config: {
      models: [{
        id: MODEL,
        context: 200000,
        pricing: { input: "3.00", output: "15.00" },
        modalities: ["text", "image"],
        capabilities: ["chat", "streaming", "tools", "structured_output", "vision"]
      }],
      providers: [{
        id: PROVIDER_ID,
        plugin: "anthropic",
        baseUrl: upstream.baseUrl,
        apiKeyEnv: "ANTHROPIC_UPSTREAM_KEY",
        timeoutMs: 1500,
        deployments: [{ model: MODEL, upstreamModel: UPSTREAM_MODEL, cost: { input: "2.00", output: "10.00" } }]
      }]
    },
    env: { ANTHROPIC_UPSTREAM_KEY: UPSTREAM_KEY }
  })
  key = (await gateway.account()).key
  client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0, fetch: recordingFetch(seen) })
})
afterAll(async () => {
  await gateway?.close()
  await upstream?.close()
})
// Thinking blocks in every answer, so the leak scan would see them if they got through.
beforeEach(() => upstream.behave({ thinking: true }))

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

const tools = [{
  type: "function" as const,
  function: {
    name: "lookup",
    description: "Looks a thing up",
    parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] }
  }
}]

describe("chat completions through an Anthropic upstream", () => {
  it("answers a normal completion under our model name, billed on the upstream's usage", async () => {
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
    // 4 words + 3 framing tokens in, 2 out, as the fake counts.
    expect(completion.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 })
    const sent = upstream.requests.at(-1)!
    expect(sent.path).toBe("/v1/messages")
    expect(sent.headers["x-api-key"]).toBe(UPSTREAM_KEY)
    expect(sent.headers["anthropic-version"]).toBe("2023-06-01")
    expect(sent.body).toEqual({
      model: UPSTREAM_MODEL,
      max_tokens: 50,
      system: "Be brief",
      messages: [{ role: "user", content: "ping 42" }],
      temperature: 0.3
    })
  })

  it("bills the call at the model's price on the upstream's token counts", async () => {
    const { response, body } = await post({ model: MODEL, messages: [{ role: "user", content: "ping 42" }] })
    expect(response.status).toBe(200)
    expect(body.usage).toEqual({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 })
    // (5 × 3.00 + 2 × 15.00) / 1e6 USD
    expect(Number(response.headers.get("x-svc-total-usd"))).toBeCloseTo(0.000045, 12)
    expect(upstream.requests.at(-1)!.body.max_tokens).toBe(4096)
  })

  it("streams through the client: content reassembles, usage comes last when asked", async () => {
    const prompt = "stream this sentence for me please"
    const whole = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: prompt }] })
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: prompt }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    const ids = new Set<string>()
    const chunks: Array<OpenAI.ChatCompletionChunk> = []
    for await (const chunk of stream) {
      chunks.push(chunk)
      ids.add(chunk.id)
      expect(chunk.model).toBe(MODEL)
      text += chunk.choices[0]?.delta.content ?? ""
    }
    expect(text).toBe(whole.choices[0]!.message.content)
    expect(ids.size).toBe(1)
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant")
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("stop")
    expect(chunks.at(-1)!.choices).toEqual([])
    expect(chunks.at(-1)!.usage).toMatchObject(whole.usage!)
    expect(upstream.requests.at(-1)!.body.stream).toBe(true)
  })

  it("streams without a usage chunk when not asked", async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "no usage please" }],
      stream: true
    })
    const chunks: Array<OpenAI.ChatCompletionChunk> = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(chunks.every((chunk) => chunk.choices.length === 1 && !chunk.usage)).toBe(true)
    expect(chunks.map((c) => c.choices[0]!.delta.content ?? "").join("")).toBe("no usage please")
  })

  it("returns tool calls, streams them, and takes the results back", async () => {
    const messages: Array<OpenAI.ChatCompletionMessageParam> = [{ role: "user", content: "find the thing" }]
    const withTools = await client.chat.completions.create({ model: MODEL, messages, tools, tool_choice: "auto" })
    expect(withTools.choices[0]!.finish_reason).toBe("tool_calls")
    const call = withTools.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall
    expect(call.id).toMatch(/^call_/)
    expect(call.function.name).toBe("lookup")
    expect(JSON.parse(call.function.arguments)).toEqual({ q: "text" })
    expect(upstream.requests.at(-1)!.body.tools).toEqual([
      { name: "lookup", description: "Looks a thing up", input_schema: tools[0]!.function.parameters }
    ])
    expect(upstream.requests.at(-1)!.body.tool_choice).toEqual({ type: "auto" })

    // The same call streamed: the client's deltas reassemble to the same call.
    const stream = await client.chat.completions.create({ model: MODEL, messages, tools, stream: true })
    let args = ""
    let finish: string | null | undefined
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (delta.id) expect(delta).toMatchObject({ index: 0, id: call.id, function: { name: "lookup" } })
        args += delta.function?.arguments ?? ""
      }
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(args).toBe(call.function.arguments)
    expect(finish).toBe("tool_calls")

    const answer = await client.chat.completions.create({
      model: MODEL,
      tools,
      messages: [
        ...messages,
        withTools.choices[0]!.message,
        { role: "tool", tool_call_id: call.id, content: "the thing is in the drawer" }
      ]
    })
    expect(answer.choices[0]!.finish_reason).toBe("stop")
    expect(answer.choices[0]!.message.content).toContain("the thing is in the drawer")
    const sent = upstream.requests.at(-1)!.body
    expect(sent.messages[1]).toEqual({
      role: "assistant",
      content: [{ type: "tool_use", id: call.id, name: "lookup", input: { q: "text" } }]
    })
    expect(sent.messages[2]).toEqual({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: call.id, content: "the thing is in the drawer" }]
    })
  })

  it("serves json_schema structured output as JSON content, for JSON and streams", async () => {
    const schema = { type: "object", properties: { answer: { type: "string" }, sure: { type: "boolean" } }, required: ["answer", "sure"] }
    const request = {
      model: MODEL,
      messages: [{ role: "user" as const, content: "structured please" }],
      response_format: { type: "json_schema" as const, json_schema: { name: "reply", schema } }
    }
    const structured = await client.chat.completions.create(request)
    expect(structured.choices[0]!.finish_reason).toBe("stop")
    expect(structured.choices[0]!.message.tool_calls ?? []).toEqual([])
    expect(JSON.parse(structured.choices[0]!.message.content!)).toEqual({ answer: "text", sure: true })
    expect(upstream.requests.at(-1)!.body.tool_choice).toMatchObject({ type: "tool" })

    let text = ""
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
      text += chunk.choices[0]?.delta.content ?? ""
    }
    expect(text).toBe(structured.choices[0]!.message.content)
  })

  it("refuses what the plugin cannot translate as 400 naming the field, without calling the upstream", async () => {
    const before = upstream.requests.length
    const { body, response } = await post({
      model: MODEL,
      messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png,%E0%A4%A" } }] }]
    })
    expect(response.status).toBe(400)
    expect(body.error.code).toBe("invalid_request")
    expect(body.error.message).toContain("image_url")
    expect(upstream.requests.length).toBe(before)
  })

  it("turns an upstream 5xx into 502 upstream_error", async () => {
    upstream.behave({ status: 529 })
    const { body, response } = await post({ model: MODEL, messages: [{ role: "user", content: "x" }] })
    expect(response.status).toBe(502)
    expect(body.error.code).toBe("upstream_error")
  })

  it("never names the upstream: no provider id, upstream model, address, key or upstream ids in anything a caller saw", () => {
    const host = new URL(upstream.baseUrl).host
    const secrets = [
      PROVIDER_ID, UPSTREAM_MODEL, host, upstream.baseUrl, UPSTREAM_KEY,
      FAKE_MESSAGE_ID, FAKE_TOOL_USE_ID, "toolu_", FAKE_THINKING, FAKE_SIGNATURE, FAKE_REQUEST_ID, "org-fake", "anthropic"
    ]
    expect(seen.length).toBeGreaterThan(8)
    for (const response of seen) {
      for (const secret of secrets) expect(response).not.toContain(secret)
    }
  })
})
