/**
 * `POST /v1/responses` on the default install, driven by the official
 * `openai` SDK (`client.responses.create`, plain and streamed) and by the
 * Vercel AI SDK's default OpenAI provider, which speaks the Responses API:
 * text, instructions, a JSON schema, a tool loop, billing with receipts,
 * refusals and idempotent replays.
 */
import { createOpenAI } from "@ai-sdk/openai"
import { generateObject, generateText, stepCountIs, streamText, tool } from "ai"
import { Ajv2020 } from "ajv/dist/2020.js"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { z } from "zod"
import { type DefaultInstall, startDefaultInstall } from "./support/defaultInstall.ts"

let install: DefaultInstall
let client: OpenAI

beforeAll(async () => {
  install = await startDefaultInstall()
  client = new OpenAI({ apiKey: install.key, baseURL: install.baseURL, maxRetries: 0 })
})
afterAll(() => install?.gateway.close())

const weather = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather in a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string", minLength: 2 } },
    required: ["city"],
    additionalProperties: false
  },
  strict: true
}

const post = (body: unknown, key = install.key, headers: Record<string, string> = {}) =>
  install.gateway.request("POST", "/v1/responses", { key, body, headers })

describe("POST /v1/responses with the openai SDK", () => {
  it("answers text with usage and the privacy block, billed exactly by its receipt", async () => {
    const before = await install.balance()
    const { data, response } = await client.responses.create({
      model: "svc/pro",
      instructions: "Be brief.",
      input: "Hello Responses"
    }).withResponse()
    expect(data.output_text).toContain("Hello Responses")
    expect(data).toMatchObject({ object: "response", status: "completed", model: "svc/pro", store: false })
    expect(data.usage!.input_tokens).toBeGreaterThan(0)
    expect((data as any).privacy.class).toBe("standard_route")
    const receiptId = response.headers.get("x-svc-receipt-id")!
    expect(data.id).toBe(receiptId.replace("rcpt_", "resp_"))
    const total = response.headers.get("x-svc-total-usd")!
    const after = await install.balance()
    expect(Number(before) - Number(after)).toBeCloseTo(Number(total), 9)
  })

  it("streams the Responses events in order, with numbered events and final usage", async () => {
    const stream = await client.responses.create({ model: "svc/balanced", input: "Stream this answer", stream: true })
    const types: Array<string> = []
    const numbers: Array<number> = []
    let text = ""
    let final: any
    for await (const event of stream) {
      types.push(event.type)
      numbers.push(event.sequence_number)
      if (event.type === "response.output_text.delta") text += event.delta
      if (event.type === "response.completed") final = event.response
    }
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"])
    expect(types.slice(-4)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"])
    expect(numbers).toEqual(numbers.map((_, i) => i))
    expect(text).toContain("Stream this answer")
    expect(final.output[0].content[0].text).toBe(text)
    expect(final.usage.output_tokens).toBeGreaterThan(0)
  })

  it("answers a json_schema text format with JSON that validates", async () => {
    const schema = { type: "object", properties: { name: { type: "string" }, size: { enum: ["s", "m"] } }, required: ["name", "size"], additionalProperties: false }
    const response = await client.responses.create({
      model: "auto",
      input: [{ role: "user", content: [{ type: "input_text", text: "A product" }] }],
      text: { format: { type: "json_schema", name: "product", schema, strict: true } }
    })
    expect(new Ajv2020({ strict: false }).validate(schema, JSON.parse(response.output_text))).toBe(true)
  })

  it("calls a function tool, then answers from its output (model auto)", async () => {
    const first = await client.responses.create({ model: "auto", input: "Weather in Paris?", tools: [weather] })
    const call = first.output.find((item) => item.type === "function_call")
    expect(call?.type).toBe("function_call")
    if (call?.type !== "function_call") return
    expect(new Ajv2020({ strict: false }).validate(weather.parameters, JSON.parse(call.arguments))).toBe(true)
    const second = await client.responses.create({
      model: "auto",
      tools: [weather],
      input: [
        { role: "user", content: "Weather in Paris?" },
        { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: "function_call_output", call_id: call.call_id, output: "18 degrees, sunny" }
      ]
    })
    expect(second.output_text).toContain("18 degrees, sunny")
  })

  it("says incomplete when cut at max_output_tokens", async () => {
    const response = await client.responses.create({ model: "svc/swift", input: "A long question indeed", max_output_tokens: 2 })
    expect(response.status).toBe("incomplete")
    expect(response.incomplete_details?.reason).toBe("max_output_tokens")
    expect(response.usage!.output_tokens).toBe(2)
  })

  it("refuses what a stateless gateway cannot serve, and an empty balance, before anything is spent", async () => {
    for (const [body, param] of [
      [{ model: "svc/pro", input: "x", previous_response_id: "resp_1" }, "previous_response_id"],
      [{ model: "svc/pro", input: [{ type: "item_reference", id: "msg_1" }] }, "input[0]"],
      [{ model: "svc/pro", input: "x", tools: [{ type: "web_search" }] }, "tools[0].type"],
      [{ model: "svc/pro", input: "x", background: true }, "background"]
    ] as const) {
      const refused = await post(body)
      expect(refused.status, JSON.stringify(body)).toBe(400)
      expect(refused.body.error).toMatchObject({ code: "invalid_request", type: "invalid_request_error", param })
    }
    const broke = await install.gateway.account({ credit: "0" })
    const poor = await post({ model: "svc/pro", input: "x" }, broke.key)
    expect(poor.status).toBe(402)
  })

  it("replays an idempotent response, plain and streamed, without a second charge", async () => {
    for (const stream of [false, true]) {
      const headers = { "idempotency-key": `responses-${stream}` }
      const body = { model: "svc/swift", input: "Once only", stream }
      const first = await post(body, install.key, headers)
      const balance = await install.balance()
      const again = await post(body, install.key, headers)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      expect(again.text).toBe(first.text)
      expect(await install.balance()).toBe(balance)
    }
  })
})

describe("POST /v1/responses with the Vercel AI SDK's default OpenAI provider", () => {
  const provider = () => createOpenAI({ baseURL: install.baseURL, apiKey: install.key })
  const getWeather = tool({
    description: "Weather in a city",
    inputSchema: z.object({ city: z.string().min(2) }),
    execute: async ({ city }) => `${city}: 18 degrees, sunny`
  })

  it("generates and streams text", async () => {
    const { text, usage } = await generateText({ model: provider()("svc/pro"), prompt: "Hello from the AI SDK" })
    expect(text).toContain("Hello from the AI SDK")
    expect(usage.outputTokens).toBeGreaterThan(0)
    const stream = streamText({ model: provider()("svc/balanced"), prompt: "Stream from the AI SDK" })
    let streamed = ""
    for await (const delta of stream.textStream) streamed += delta
    expect(streamed).toContain("Stream from the AI SDK")
  })

  it("runs a tool loop to a final answer", async () => {
    const result = await generateText({
      model: provider()("auto"),
      tools: { getWeather },
      stopWhen: stepCountIs(3),
      prompt: "What is the weather in Oslo?"
    })
    expect(result.steps[0]!.toolCalls[0]!.toolName).toBe("getWeather")
    expect(result.text).toContain("18 degrees")
  })

  it("continues a conversation with store: false, and says why not without it", async () => {
    const messages = [
      { role: "user" as const, content: "Hi" },
      { role: "assistant" as const, content: [{ type: "text" as const, text: "Hello!", providerOptions: { openai: { itemId: "msg_earlier" } } }] },
      { role: "user" as const, content: "Again please" }
    ]
    const stateless = await generateText({ model: provider()("svc/pro"), messages, providerOptions: { openai: { store: false } } })
    expect(stateless.text).toContain("Again please")
    const refused = await generateText({ model: provider()("svc/pro"), messages }).catch((error) => error)
    expect(refused.statusCode).toBe(400)
    expect(refused.message).toMatch(/store = false/)
  })

  it("generates an object that fits a zod schema", async () => {
    const product = z.object({ name: z.string(), tags: z.array(z.string()), size: z.enum(["s", "m", "l"]) })
    const { object } = await generateObject({ model: provider()("auto"), schema: product, prompt: "Invent a product" })
    expect(product.parse(object)).toEqual(object)
  })
})
