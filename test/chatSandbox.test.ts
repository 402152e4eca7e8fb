/** Chat completions through the real server and the official `openai` client, served by the sandbox plugin. */
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
let client: OpenAI

/**
 * The house models carry the spec's capabilities (chat, vision, streaming), so tools and structured
 * output go to a third-party model the sandbox also serves, as an operator would configure it.
 */
const AGENT_MODEL = "svc/sandbox-agent"

beforeAll(async () => {
  gateway = await startGateway({
    config: {
      models: [{
        id: AGENT_MODEL,
        context: 128000,
        pricing: { input: "0.10", output: "0.40" },
        modalities: ["text"],
        capabilities: ["chat", "streaming", "tools", "structured_output"]
      }],
      providers: [{
        id: "sandbox",
        plugin: "sandbox",
        deployments: ["svc/swift", "svc/balanced", "svc/pro", "svc/premier", "svc/embed", AGENT_MODEL].map((model) => ({ model }))
      }]
    }
  })
  const { key } = await gateway.account()
  client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
})
afterAll(() => gateway?.close())

const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { type: "string", enum: ["c", "f"] } },
      required: ["city", "unit"],
      additionalProperties: false
    }
  }
}

describe("chat completions on the sandbox", () => {
  it("answers text and names the catalogue model", async () => {
    const { data, response } = await client.chat.completions
      .create({ model: "svc/pro", messages: [{ role: "user", content: "Say hello" }] })
      .withResponse()
    expect(data.object).toBe("chat.completion")
    expect(data.id).toMatch(/^chatcmpl-/)
    expect(data.model).toBe("svc/pro")
    expect(data.choices[0]!.message.content).toContain("Say hello")
    expect(data.choices[0]!.finish_reason).toBe("stop")
    expect(data.usage!.total_tokens).toBe(data.usage!.prompt_tokens + data.usage!.completion_tokens)
    expect(response.headers.get("x-request-id")).toMatch(/^req_[A-Za-z0-9_-]{16,}$/)
  })

  it("streams deltas that reassemble to the whole answer, with usage when asked", async () => {
    const whole = await client.chat.completions.create({
      model: "svc/balanced",
      messages: [{ role: "user", content: "Tell me a story" }]
    })
    const stream = await client.chat.completions.create({
      model: "svc/balanced",
      messages: [{ role: "user", content: "Tell me a story" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    const chunks = []
    for await (const chunk of stream) {
      chunks.push(chunk)
      text += chunk.choices[0]?.delta.content ?? ""
    }
    expect(text).toBe(whole.choices[0]!.message.content)
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1)
    expect(chunks.every((chunk) => chunk.model === "svc/balanced")).toBe(true)
    expect(chunks.at(-1)!.usage).toEqual(whole.usage)
    expect(chunks.some((chunk) => chunk.choices[0]?.finish_reason === "stop")).toBe(true)
  })

  it("leaves usage out of the stream when the caller did not ask", async () => {
    const stream = await client.chat.completions.create({
      model: "svc/swift",
      messages: [{ role: "user", content: "hi" }],
      stream: true
    })
    const chunks = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(chunks.length).toBeGreaterThan(2)
    expect(chunks.every((chunk) => chunk.usage == null && chunk.choices.length === 1)).toBe(true)
  })

  it("returns a tool call whose arguments fit the tool's schema", async () => {
    const completion = await client.chat.completions.create({
      model: AGENT_MODEL,
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherTool],
      tool_choice: "auto"
    })
    const choice = completion.choices[0]!
    expect(choice.finish_reason).toBe("tool_calls")
    const call = choice.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall
    expect(call.function.name).toBe("get_weather")
    const args = JSON.parse(call.function.arguments)
    expect(typeof args.city).toBe("string")
    expect(["c", "f"]).toContain(args.unit)

    const followUp = await client.chat.completions.create({
      model: AGENT_MODEL,
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: null, tool_calls: [call] },
        { role: "tool", tool_call_id: call.id, content: "{\"temp\": 21}" }
      ],
      tools: [weatherTool]
    })
    expect(followUp.choices[0]!.finish_reason).toBe("stop")
    expect(followUp.choices[0]!.message.content).toContain("21")
  })

  it("streams a tool call the client reassembles", async () => {
    const runner = client.chat.completions.stream({
      model: AGENT_MODEL,
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: [weatherTool],
      tool_choice: { type: "function", function: { name: "get_weather" } }
    })
    const final = await runner.finalChatCompletion()
    const call = final.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall
    expect(call.function.name).toBe("get_weather")
    expect(JSON.parse(call.function.arguments)).toHaveProperty("city")
  })

  it("answers json_schema with JSON that validates, and json_object with an object", async () => {
    const schema = {
      type: "object",
      properties: {
        title: { type: "string" },
        year: { type: "integer", minimum: 1900, maximum: 2100 },
        tags: { type: "array", items: { type: "string" }, minItems: 1 }
      },
      required: ["title", "year", "tags"],
      additionalProperties: false
    }
    const structured = await client.chat.completions.create({
      model: AGENT_MODEL,
      messages: [{ role: "user", content: "A film" }],
      response_format: { type: "json_schema", json_schema: { name: "film", schema, strict: true } }
    })
    const film = JSON.parse(structured.choices[0]!.message.content!)
    expect(typeof film.title).toBe("string")
    expect(Number.isInteger(film.year) && film.year >= 1900 && film.year <= 2100).toBe(true)
    expect(film.tags.length).toBeGreaterThanOrEqual(1)

    const object = await client.chat.completions.create({
      model: AGENT_MODEL,
      messages: [{ role: "user", content: "Anything" }],
      response_format: { type: "json_object" }
    })
    const parsed = JSON.parse(object.choices[0]!.message.content!)
    expect(typeof parsed).toBe("object")
    expect(Array.isArray(parsed)).toBe(false)
  })

  it("acknowledges image parts", async () => {
    const completion = await client.chat.completions.create({
      model: "svc/balanced",
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "What is in these?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }
        ]
      }]
    })
    expect(completion.choices[0]!.message.content).toContain("2 images")
  })

  it("honours max_tokens with finish_reason length", async () => {
    const completion = await client.chat.completions.create({
      model: "svc/swift",
      messages: [{ role: "user", content: "Write a long essay about the sea and the sky" }],
      max_tokens: 3
    })
    expect(completion.choices[0]!.finish_reason).toBe("length")
    expect(completion.usage!.completion_tokens).toBe(3)
  })

  it("lists the catalogue through the client", async () => {
    const ids = []
    for await (const model of client.models.list()) ids.push(model.id)
    expect(ids).toEqual(["svc/swift", "svc/balanced", "svc/pro", "svc/premier", "svc/embed", AGENT_MODEL])
    const pro = await client.models.retrieve("svc/pro")
    expect(pro.id).toBe("svc/pro")
  })
})
