/**
 * The official `openai` SDK against the default install, unchanged: every
 * chat shape the README promises (text, streaming, tools through to a final
 * answer, `json_object`, strict `json_schema`, reasoning), embeddings, the
 * model list, and the errors it raises with OpenAI's `type`.
 */
import { Ajv2020 } from "ajv/dist/2020.js"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DefaultInstall, startDefaultInstall } from "../support/defaultInstall.ts"

let install: DefaultInstall
let client: OpenAI

beforeAll(async () => {
  install = await startDefaultInstall()
  client = new OpenAI({ apiKey: install.key, baseURL: install.baseURL, maxRetries: 0 })
})
afterAll(() => install?.gateway.close())

const weather = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string", minLength: 2 }, unit: { type: "string", enum: ["c", "f"] } },
      required: ["city", "unit"],
      additionalProperties: false
    },
    strict: true
  }
}

describe("openai SDK on the default install", () => {
  it("chats and streams on a house model, and the call is billed", async () => {
    const before = await install.balance()
    const reply = await client.chat.completions.create({ model: "svc/pro", messages: [{ role: "user", content: "Hello" }] })
    expect(reply.choices[0]!.message.content).toContain("Hello")
    expect(await install.balance()).not.toBe(before)
    let text = ""
    for await (const chunk of await client.chat.completions.create({
      model: "svc/balanced",
      messages: [{ role: "user", content: "Stream this" }],
      stream: true
    })) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toContain("Stream this")
  })

  it("calls a tool with arguments that fit its strict schema, then answers from the tool's result (model auto)", async () => {
    const messages: Array<OpenAI.ChatCompletionMessageParam> = [{ role: "user", content: "Weather in Paris?" }]
    const first = await client.chat.completions.create({ model: "auto", messages, tools: [weather] })
    const call = first.choices[0]!.message.tool_calls?.[0]
    expect(first.choices[0]!.finish_reason).toBe("tool_calls")
    expect(call?.type).toBe("function")
    if (call?.type !== "function") return
    const args = JSON.parse(call.function.arguments)
    expect(new Ajv2020({ strict: false }).validate(weather.function.parameters, args)).toBe(true)
    messages.push(first.choices[0]!.message, { role: "tool", tool_call_id: call.id, content: "18 degrees, sunny" })
    const final = await client.chat.completions.create({ model: "auto", messages, tools: [weather] })
    expect(final.choices[0]!.finish_reason).toBe("stop")
    expect(final.choices[0]!.message.content).toContain("18 degrees, sunny")
  })

  it("streams a tool call whose pieces join to valid arguments", async () => {
    const stream = await client.chat.completions.create({
      model: "cheapest",
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: [weather],
      tool_choice: "required",
      stream: true
    })
    let args = ""
    let finish: string | null = null
    for await (const chunk of stream) {
      args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? ""
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(finish).toBe("tool_calls")
    expect(new Ajv2020({ strict: false }).validate(weather.function.parameters, JSON.parse(args))).toBe(true)
  })

  it("answers json_object and a strict json_schema with JSON that validates", async () => {
    const object = await client.chat.completions.create({
      model: "auto",
      messages: [{ role: "user", content: "Reply in JSON" }],
      response_format: { type: "json_object" }
    })
    expect(typeof JSON.parse(object.choices[0]!.message.content!)).toBe("object")
    const schema = {
      type: "object",
      properties: {
        name: { type: "string" },
        tags: { type: "array", items: { type: "string" } },
        price: { anyOf: [{ type: "number", minimum: 1 }, { type: "null" }] },
        size: { type: "string", enum: ["s", "m", "l"] }
      },
      required: ["name", "tags", "price", "size"],
      additionalProperties: false
    }
    const structured = await client.chat.completions.create({
      model: "fast",
      messages: [{ role: "user", content: "A product" }],
      response_format: { type: "json_schema", json_schema: { name: "product", schema, strict: true } }
    })
    expect(new Ajv2020({ strict: false }).validate(schema, JSON.parse(structured.choices[0]!.message.content!))).toBe(true)
    let streamed = ""
    for await (const chunk of await client.chat.completions.create({
      model: "best",
      messages: [{ role: "user", content: "A product" }],
      response_format: { type: "json_schema", json_schema: { name: "product", schema, strict: true } },
      stream: true
    })) streamed += chunk.choices[0]?.delta.content ?? ""
    expect(new Ajv2020({ strict: false }).validate(schema, JSON.parse(streamed))).toBe(true)
  })

  it("shows a reasoning model's thinking and bills it as output", async () => {
    const reply = await client.chat.completions.create({
      model: "svc/sandbox-reasoner",
      messages: [{ role: "user", content: "Why is the sky blue?" }],
      reasoning_effort: "low"
    })
    const message = reply.choices[0]!.message as typeof reply.choices[0]["message"] & { reasoning_content?: string }
    expect(message.reasoning_content).toMatch(/think/)
    const reasoning = reply.usage!.completion_tokens_details!.reasoning_tokens!
    expect(reasoning).toBeGreaterThan(0)
    expect(reply.usage!.completion_tokens).toBeGreaterThan(reasoning)
  })

  it("embeds, lists the catalogue with created and owned_by, and refuses n > 1 with a reason", async () => {
    const embedding = await client.embeddings.create({ model: "svc/embed", input: ["a", "b"] })
    expect(embedding.data).toHaveLength(2)
    const models = []
    for await (const model of client.models.list()) models.push(model)
    const ids = models.map((model) => model.id)
    expect(ids).toEqual(expect.arrayContaining(["svc/pro", "svc/sandbox-mini", "svc/sandbox-large", "svc/sandbox-reasoner"]))
    for (const model of models) expect(model).toMatchObject({ object: "model", created: expect.any(Number), owned_by: "svc" })
    const refused = await client.chat.completions.create({ model: "svc/pro", n: 2, messages: [{ role: "user", content: "x" }] })
      .catch((error) => error)
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError)
    expect(refused.param).toBe("n")
    expect(refused.type).toBe("invalid_request_error")
    expect(refused.message).toMatch(/one answer per call/)
  })

  it("raises the SDK's error classes with OpenAI's type", async () => {
    const wrongKey = new OpenAI({ apiKey: "svc_live_nope", baseURL: install.baseURL, maxRetries: 0 })
    const unauthorized = await wrongKey.models.list().catch((error) => error)
    expect(unauthorized).toBeInstanceOf(OpenAI.AuthenticationError)
    expect(unauthorized.type).toBe("authentication_error")
    const broke = await install.gateway.account({ credit: "0" })
    const poor = new OpenAI({ apiKey: broke.key, baseURL: install.baseURL, maxRetries: 0 })
    const refused = await poor.chat.completions.create({ model: "svc/pro", messages: [{ role: "user", content: "x" }] })
      .catch((error) => error)
    expect(refused.status).toBe(402)
    expect(refused.type).toBe("insufficient_quota")
    expect(refused.code).toBe("insufficient_funds")
  })
})
