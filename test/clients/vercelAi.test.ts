/**
 * The Vercel AI SDK (`ai` 6) against the default install, with the
 * OpenAI-compatible provider and the OpenAI provider's chat-completions
 * model: text, streaming, tools through a multi-step loop, objects from a zod
 * schema, and embeddings. (The OpenAI provider's default model speaks the
 * Responses API: test/responses.test.ts.)
 */
import { createOpenAI } from "@ai-sdk/openai"
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { embedMany, generateObject, generateText, stepCountIs, streamText, tool } from "ai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { z } from "zod"
import { type DefaultInstall, startDefaultInstall } from "../support/defaultInstall.ts"

let install: DefaultInstall
let compatible: ReturnType<typeof createOpenAICompatible>
let openai: ReturnType<typeof createOpenAI>

beforeAll(async () => {
  install = await startDefaultInstall()
  // `supportsStructuredOutputs` makes the provider send the zod schema as a json_schema response format
  // (without it the provider drops the schema and asks for any JSON object).
  compatible = createOpenAICompatible({
    name: "svc",
    baseURL: install.baseURL,
    apiKey: install.key,
    includeUsage: true,
    supportsStructuredOutputs: true
  })
  openai = createOpenAI({ baseURL: install.baseURL, apiKey: install.key })
})
afterAll(() => install?.gateway.close())

const weather = tool({
  description: "Weather in a city",
  inputSchema: z.object({ city: z.string().min(2), unit: z.enum(["c", "f"]) }),
  execute: async ({ city }) => `${city}: 18 degrees, sunny`
})

const product = z.object({
  name: z.string(),
  tags: z.array(z.string()).min(1),
  price: z.number().positive().nullable(),
  size: z.enum(["s", "m", "l"])
})

describe.each([
  ["openai-compatible provider", () => compatible.chatModel("svc/pro"), () => compatible.chatModel("auto")],
  ["OpenAI provider's chat model", () => openai.chat("svc/pro"), () => openai.chat("auto")]
])("Vercel AI SDK, %s, on the default install", (_, houseModel, routed) => {
  it("generates text with usage, and streams it", async () => {
    const result = await generateText({ model: houseModel(), prompt: "Hello there" })
    expect(result.text).toContain("Hello there")
    expect(result.usage.inputTokens).toBeGreaterThan(0)
    expect(result.usage.outputTokens).toBeGreaterThan(0)
    const stream = streamText({ model: houseModel(), prompt: "Stream this please" })
    let text = ""
    for await (const delta of stream.textStream) text += delta
    expect(text).toContain("Stream this please")
    expect((await stream.usage).outputTokens).toBeGreaterThan(0)
  })

  it("runs a tool loop to a final answer with model auto", async () => {
    const result = await generateText({
      model: routed(),
      tools: { weather },
      stopWhen: stepCountIs(3),
      prompt: "What is the weather in Paris?"
    })
    expect(result.steps[0]!.toolCalls[0]!.toolName).toBe("weather")
    expect(result.steps[0]!.toolResults[0]!.output).toMatch(/18 degrees/)
    expect(result.text).toContain("18 degrees")
    expect(result.finishReason).toBe("stop")
  })

  it("streams a tool call", async () => {
    const stream = streamText({ model: routed(), tools: { weather }, toolChoice: "required", prompt: "Weather in Oslo?" })
    const calls = []
    for await (const part of stream.fullStream) if (part.type === "tool-call") calls.push(part)
    expect(calls).toHaveLength(1)
    expect(calls[0]!.toolName).toBe("weather")
  })

  it("generates an object that fits a zod schema", async () => {
    const { object } = await generateObject({ model: routed(), schema: product, prompt: "Invent a product" })
    expect(product.parse(object)).toEqual(object)
  })
})

describe("Vercel AI SDK embeddings on the default install", () => {
  it("embeds many values with both providers", async () => {
    for (const model of [compatible.textEmbeddingModel("svc/embed"), openai.embedding("svc/embed")]) {
      const { embeddings, usage } = await embedMany({ model, values: ["sunny day", "rainy night", "sunny day"] })
      expect(embeddings).toHaveLength(3)
      expect(embeddings[0]).toEqual(embeddings[2])
      expect(embeddings[0]).not.toEqual(embeddings[1])
      expect(usage.tokens).toBeGreaterThan(0)
    }
  })
})
