/**
 * LangChain's OpenAI integration (`@langchain/openai` 1.x) against the
 * default install: `ChatOpenAI` invoke and stream, `bindTools` through to a
 * final answer, `withStructuredOutput` from a zod schema, and
 * `OpenAIEmbeddings`.
 */
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages"
import { tool } from "@langchain/core/tools"
import { ChatOpenAI, OpenAIEmbeddings } from "@langchain/openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { z } from "zod"
import { type DefaultInstall, startDefaultInstall } from "../support/defaultInstall.ts"

let install: DefaultInstall
const chat = (model: string) =>
  new ChatOpenAI({ model, apiKey: install.key, configuration: { baseURL: install.baseURL }, maxRetries: 0 })

beforeAll(async () => {
  install = await startDefaultInstall()
})
afterAll(() => install?.gateway.close())

const weather = tool(async ({ city }) => `${city}: 18 degrees, sunny`, {
  name: "get_weather",
  description: "Weather in a city",
  schema: z.object({ city: z.string().min(2), unit: z.enum(["c", "f"]) })
})

describe("LangChain on the default install", () => {
  it("invokes and streams ChatOpenAI, with token usage", async () => {
    const reply = await chat("svc/pro").invoke("Hello from LangChain")
    expect(reply.content).toContain("Hello from LangChain")
    expect(reply.usage_metadata?.output_tokens).toBeGreaterThan(0)
    let text = ""
    for await (const chunk of await chat("svc/balanced").stream("Stream this from LangChain")) text += chunk.content
    expect(text).toContain("Stream this from LangChain")
  })

  it("binds tools, runs the tool and answers from its result (model auto)", async () => {
    const model = chat("auto").bindTools([weather])
    const question = new HumanMessage("Weather in Paris?")
    const first = await model.invoke([question])
    const call = first.tool_calls?.[0]
    expect(call?.name).toBe("get_weather")
    expect(weather.schema.safeParse(call?.args).success).toBe(true)
    const result = await weather.invoke(call!)
    expect(result).toBeInstanceOf(ToolMessage)
    const final = await model.invoke([question, first as AIMessage, result])
    expect(final.tool_calls ?? []).toHaveLength(0)
    expect(final.content).toContain("18 degrees")
  })

  it("gives structured output that fits a zod schema", async () => {
    const product = z.object({ name: z.string(), tags: z.array(z.string()), size: z.enum(["s", "m", "l"]) })
    for (const method of ["jsonSchema", "functionCalling"] as const) {
      const answer = await chat("auto").withStructuredOutput(product, { method }).invoke("Invent a product")
      expect(product.parse(answer)).toEqual(answer)
    }
  })

  it("embeds documents and a query", async () => {
    const embeddings = new OpenAIEmbeddings({ model: "svc/embed", apiKey: install.key, configuration: { baseURL: install.baseURL } })
    const vectors = await embeddings.embedDocuments(["sunny day", "rainy night"])
    expect(vectors).toHaveLength(2)
    expect(vectors[0]!.length).toBeGreaterThan(0)
    expect(await embeddings.embedQuery("sunny day")).toEqual(vectors[0])
  })
})
