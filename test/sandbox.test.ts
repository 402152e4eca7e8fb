/** The offline sandbox plugin: deterministic answers, tool calls, schema-valid JSON, streams and embeddings. */
import { describe, expect, it } from "@effect/vitest"
import { Ajv2020 } from "ajv/dist/2020.js"
import { Chunk, Effect, Layer, Option, Stream } from "effect"
import { ProviderRegistryLive } from "../layers/catalogue/ProviderRegistryLive.ts"
import { plugin, SandboxPlugin } from "../plugins/providers/sandbox/index.ts"
import { jsonSchemaSample } from "../plugins/support/jsonSchemaSample.ts"
import type { ChatChunk, ChatCompletion, ChatRequest, FunctionTool } from "../services/Chat.ts"
import { ProviderRegistry } from "../services/Providers.ts"
import { makeAdapter } from "./support/adapterHarness.ts"

const ajv = new Ajv2020({ strict: false })
for (const [name, pattern] of Object.entries({
  "date-time": /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
  email: /^[^@\s]+@[^@\s]+\.[a-z]+$/,
  uri: /^https?:\/\/\S+$/,
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
})) ajv.addFormat(name, pattern)

const expectValid = (schema: object, value: unknown) => {
  const validate = ajv.compile(schema)
  expect(validate(value), JSON.stringify({ value, errors: validate.errors })).toBe(true)
}

const MODEL = "sandbox-1"
type Body = Partial<ChatRequest> & Pick<ChatRequest, "messages">
const provider = { id: "sandbox", plugin: "sandbox", timeoutMs: 60_000, deployments: [] }
const adapter = makeAdapter(plugin, provider, {}).pipe(Effect.scoped)
const call = (request: Body) => ({ request: { model: "svc/sandbox", ...request }, upstreamModel: MODEL })
/** The sandbox always reports usage (billing relies on it when it serves). */
const complete = (request: Body) =>
  Effect.flatMap(adapter, (a) => a.complete(call(request))).pipe(
    Effect.flatMap(({ usage, ...completion }): Effect.Effect<ChatCompletion> =>
      usage === undefined ? Effect.dieMessage("the sandbox reported no usage") : Effect.succeed({ ...completion, usage })
    )
  )
const streamed = (request: Body) =>
  Effect.flatMap(adapter, (a) => a.stream(call(request))).pipe(
    Effect.flatMap(Stream.runCollect),
    Effect.map(Chunk.toArray),
    Effect.scoped
  )
const user = (content: string) => [{ role: "user" as const, content }]
const named = (name: string) => ({ type: "function" as const, function: { name } })

const weatherParameters = {
  type: "object",
  properties: {
    location: { type: "string", minLength: 2 },
    unit: { enum: ["celsius", "fahrenheit"] },
    days: { type: "integer", minimum: 1, maximum: 7 },
    when: { $ref: "#/$defs/moment" },
    tags: { type: "array", items: { type: "string" }, minItems: 2, uniqueItems: true }
  },
  required: ["location", "unit"],
  additionalProperties: false,
  $defs: { moment: { type: "string", format: "date-time" } }
}
const tools: ReadonlyArray<FunctionTool> = [
  { type: "function", function: { name: "get_weather", parameters: weatherParameters } },
  {
    type: "function",
    function: { name: "get_time", parameters: { type: "object", properties: { zone: { type: "string" } }, required: ["zone"] } }
  }
]
const toolCallOf = (completion: ChatCompletion) => completion.choices[0]!.message.tool_calls?.[0]

/** Joins stream chunks back into the message a client would see. */
const reassemble = (chunks: ReadonlyArray<ChatChunk>) => {
  let content = ""
  let id: string | undefined
  let name = ""
  let args = ""
  let finish: string | null = null
  for (const chunk of chunks) {
    for (const choice of chunk.choices) {
      content += choice.delta.content ?? ""
      for (const call of choice.delta.tool_calls ?? []) {
        id = call.id ?? id
        name += call.function?.name ?? ""
        args += call.function?.arguments ?? ""
      }
      finish = choice.finish_reason ?? finish
    }
  }
  return { content, toolCall: id === undefined ? undefined : { id, name, arguments: args }, finish }
}

describe("sandbox plugin", () => {
  it.effect("registers under its id with in-process privacy defaults", () =>
    Effect.gen(function*() {
      const registry = yield* ProviderRegistry
      const found = registry.get("sandbox")
      expect(Option.isSome(found)).toBe(true)
      expect(plugin.privacyDefaults).toEqual({ stores: false, logs: false, trains: false, operatorControlled: true })
    }).pipe(Effect.provide(Layer.provideMerge(SandboxPlugin, ProviderRegistryLive))))

  it.effect("replies in text derived from the last user message", () =>
    Effect.gen(function*() {
      const completion = yield* complete({
        messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hello there, sandbox!" }]
      })
      const choice = completion.choices[0]!
      expect(completion.model).toBe(MODEL)
      expect(completion.id).toMatch(/^chatcmpl-/)
      expect(choice.message.content).toBe(`Sandbox reply from ${MODEL} to: "Hello there, sandbox!"`)
      expect(choice.finish_reason).toBe("stop")
      // "Be brief." = 3 tokens, "Hello there, sandbox!" = 5.
      expect(completion.usage.prompt_tokens).toBe(8)
      expect(completion.usage.total_tokens).toBe(completion.usage.prompt_tokens + completion.usage.completion_tokens)
    }))

  it.effect("truncates long user text in the reply", () =>
    Effect.gen(function*() {
      const completion = yield* complete({ messages: user("word ".repeat(100)) })
      const content = completion.choices[0]!.message.content!
      expect(content.length).toBeLessThan(200)
      expect(content).toContain("...")
    }))

  it.effect("acknowledges images in the last user message", () =>
    Effect.gen(function*() {
      const image = { type: "image_url" as const, image_url: { url: "data:image/png;base64,AAAA" } }
      const completion = yield* complete({
        messages: [{ role: "user", content: [{ type: "text", text: "What are these?" }, image, image] }]
      })
      const content = completion.choices[0]!.message.content!
      expect(content).toContain(`to: "What are these?"`)
      expect(content).toContain("I received 2 images.")
    }))

  it.effect("calls the first tool with arguments that fit its schema", () =>
    Effect.gen(function*() {
      const completion = yield* complete({ messages: user("Weather in Paris?"), tools })
      const choice = completion.choices[0]!
      const call = toolCallOf(completion)!
      expect(choice.finish_reason).toBe("tool_calls")
      expect(choice.message.content).toBeNull()
      expect(call.id).toMatch(/^call_[0-9a-f]+$/)
      expect(call.function.name).toBe("get_weather")
      expectValid(weatherParameters, JSON.parse(call.function.arguments))
      expect(Object.keys(JSON.parse(call.function.arguments))).toEqual(Object.keys(weatherParameters.properties))
      expect(completion.usage.prompt_tokens).toBeGreaterThan(countWords("Weather in Paris?"))
    }))

  it.effect("calls the named tool, and calls one when required even after a tool result", () =>
    Effect.gen(function*() {
      const chosen = yield* complete({ messages: user("Time?"), tools, tool_choice: named("get_time") })
      expect(toolCallOf(chosen)?.function.name).toBe("get_time")
      expectValid(tools[1]!.function.parameters!, JSON.parse(toolCallOf(chosen)!.function.arguments))
      const required = yield* complete({ messages: afterToolResult, tools, tool_choice: "required" })
      expect(toolCallOf(required)?.function.name).toBe("get_weather")
    }))

  it.effect("is not translatable when tool_choice names an unknown tool", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(complete({ messages: user("x"), tools, tool_choice: named("nope") }))
      expect(error).toMatchObject({ _tag: "RequestNotTranslatable", reason: expect.stringContaining("tool_choice") })
    }))

  it.effect("answers in text when tool_choice is none", () =>
    Effect.gen(function*() {
      const completion = yield* complete({ messages: user("Weather?"), tools, tool_choice: "none" })
      expect(toolCallOf(completion)).toBeUndefined()
      expect(completion.choices[0]!.finish_reason).toBe("stop")
      expect(completion.choices[0]!.message.content).toContain("Weather?")
    }))

  it.effect("answers a tool result in text, so agent loops end", () =>
    Effect.gen(function*() {
      const completion = yield* complete({ messages: afterToolResult, tools })
      const content = completion.choices[0]!.message.content!
      expect(toolCallOf(completion)).toBeUndefined()
      expect(completion.choices[0]!.finish_reason).toBe("stop")
      expect(content).toContain("get_weather")
      expect(content).toContain("18 degrees and sunny")
    }))

  it.effect("returns content that validates against a json_schema response format", () =>
    Effect.gen(function*() {
      const completion = yield* complete({
        messages: user("Describe a person."),
        response_format: { type: "json_schema", json_schema: { name: "person", schema: personSchema } }
      })
      expectValid(personSchema, JSON.parse(completion.choices[0]!.message.content!))
    }))

  it.effect("returns a JSON object for json_object", () =>
    Effect.gen(function*() {
      const completion = yield* complete({
        messages: user("Say hi in JSON."),
        response_format: { type: "json_object" }
      })
      const parsed = JSON.parse(completion.choices[0]!.message.content!)
      expect(parsed.reply).toContain("Say hi in JSON.")
    }))

  it.effect("stops at max_tokens with finish_reason length", () =>
    Effect.gen(function*() {
      const full = yield* complete({ messages: user("Tell me a long story about dragons.") })
      const cut = yield* complete({ messages: user("Tell me a long story about dragons."), max_completion_tokens: 4 })
      expect(cut.choices[0]!.finish_reason).toBe("length")
      expect(cut.usage.completion_tokens).toBe(4)
      expect(full.choices[0]!.message.content!.startsWith(cut.choices[0]!.message.content!)).toBe(true)
      const roomy = yield* complete({ messages: user("Hi"), max_tokens: 1000 })
      expect(roomy.choices[0]!.finish_reason).toBe("stop")
    }))

  it.effect("streams text that reassembles to the completion, ending with usage", () =>
    Effect.gen(function*() {
      const request = { messages: user("Stream this reply in several pieces, please.") }
      const whole = yield* complete(request)
      const chunks = yield* streamed({ ...request, stream: true })
      expect(chunks[0]!.choices[0]!.delta).toEqual({ role: "assistant", content: "" })
      expect(chunks.length).toBeGreaterThan(4)
      expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1)
      expect(new Set(chunks.map((chunk) => chunk.created)).size).toBe(1)
      const last = chunks[chunks.length - 1]!
      expect(last.choices).toEqual([])
      expect(last.usage).toEqual(whole.usage)
      const finishChunk = chunks[chunks.length - 2]!
      expect(finishChunk.choices[0]).toMatchObject({ delta: {}, finish_reason: "stop" })
      expect(reassemble(chunks)).toEqual({
        content: whole.choices[0]!.message.content,
        toolCall: undefined,
        finish: "stop"
      })
    }))

  it.effect("streams tool calls that reassemble to the completion's", () =>
    Effect.gen(function*() {
      const whole = yield* complete({ messages: user("Weather?"), tools })
      const chunks = yield* streamed({ messages: user("Weather?"), tools, stream: true })
      expect(chunks[1]!.choices[0]!.delta.tool_calls?.[0])
        .toMatchObject({ index: 0, type: "function", function: { arguments: "" } })
      const call = toolCallOf(whole)!
      expect(reassemble(chunks)).toEqual({
        content: "",
        toolCall: { id: call.id, name: call.function.name, arguments: call.function.arguments },
        finish: "tool_calls"
      })
    }))

  it.effect("answers the same request the same way", () =>
    Effect.gen(function*() {
      const request = { messages: user("Same question twice."), tools }
      expect(yield* complete(request)).toEqual(yield* complete(request))
      expect(yield* streamed(request)).toEqual(yield* streamed(request))
    }))
})

describe("jsonSchemaSample", () => {
  const schemas: Record<string, object> = {
    "type arrays and null": { type: ["null", "number"], minimum: 3 },
    "exclusive integer range": { type: "integer", exclusiveMinimum: 10, exclusiveMaximum: 12 },
    "multipleOf": { type: "number", minimum: 0.25, multipleOf: 0.5 },
    "negative maximum": { type: "integer", maximum: -5 },
    "string lengths": {
      type: "object",
      properties: { short: { type: "string", maxLength: 3 }, long: { type: "string", minLength: 20 } }
    },
    "formats": {
      type: "array",
      prefixItems: ["date-time", "date", "email", "uri", "uuid"].map((format) => ({ type: "string", format })),
      items: false
    },
    "oneOf and const": { oneOf: [{ const: "fixed" }, { type: "number" }] },
    "allOf merge": {
      allOf: [
        { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
        { properties: { b: { type: "integer", minimum: 5 } }, required: ["b"] }
      ]
    },
    "unique enum items": { type: "array", items: { enum: ["x", "y", "z"] }, minItems: 3, maxItems: 3, uniqueItems: true },
    "unique objects": {
      type: "array",
      items: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      minItems: 3,
      uniqueItems: true
    },
    "recursive definitions": {
      $ref: "#/definitions/node",
      definitions: {
        node: {
          type: "object",
          properties: { value: { type: "string" }, children: { type: "array", items: { $ref: "#/definitions/node" } } },
          required: ["value", "children"]
        }
      }
    },
    "minProperties": { type: "object", additionalProperties: { type: "boolean" }, minProperties: 2 }
  }
  for (const [name, schema] of Object.entries(schemas)) {
    it(`validates: ${name}`, () => expectValid(schema, jsonSchemaSample(schema)))
  }
})

const afterToolResult: ChatRequest["messages"] = [
  { role: "user", content: "Weather in Paris?" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: `{"location":"Paris"}` } }]
  },
  { role: "tool", tool_call_id: "call_1", content: "18 degrees and sunny" }
]

const personSchema = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1 },
    age: { type: "integer", minimum: 0, maximum: 150 },
    email: { type: "string", format: "email" },
    id: { type: "string", format: "uuid" },
    born: { type: "string", format: "date" },
    nickname: { type: ["string", "null"] },
    role: { anyOf: [{ $ref: "#/$defs/role" }, { type: "null" }] },
    address: { $ref: "#/definitions/address" },
    scores: { type: "array", items: { type: "number", minimum: 0.5, maximum: 1 }, minItems: 2, maxItems: 3 },
    active: { type: "boolean" },
    kind: { const: "person" }
  },
  required: ["name", "age", "email", "address", "kind"],
  additionalProperties: false,
  $defs: { role: { type: "string", enum: ["admin", "member"] } },
  definitions: {
    address: {
      allOf: [
        { type: "object", properties: { street: { type: "string" } }, required: ["street"] },
        { properties: { city: { type: "string" } }, required: ["city"] }
      ]
    }
  }
}

const countWords = (text: string) => text.split(/\s+/).length
