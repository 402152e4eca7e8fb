/** The Gemini plugin against a fake generateContent API over a real socket: translation both ways, streams, embeddings, options and failures. */
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Exit, Scope, Stream, TestClock } from "effect"
import { plugin } from "../plugins/providers/gemini/index.ts"
import type { ChatChunk, FunctionTool } from "../services/Chat.ts"
import type { ProviderConfig } from "../services/Config.ts"
import type { UpstreamCall, UpstreamCompletion } from "../services/Providers.ts"
import { collectUntilFailure, providerConfigFor, upstreamCallFor, waitForAborts, upstreamFailureOf, makeAdapter } from "./support/adapterHarness.ts"
import {
  acquireFakeGemini,
  FAKE_MODEL_VERSION_SUFFIX,
  FAKE_RESPONSE_ID,
  FAKE_THOUGHT_TOKENS,
  type FakeGemini
} from "./support/fakeGeminiUpstream.ts"

const KEY = "AIza-test-key-0042"
const env = { GEMINI_KEY: KEY }
const MODEL = "gemini-test-pro"

const providerAt = providerConfigFor({ id: "fake-gemini", plugin: "gemini", apiKeyEnv: "GEMINI_KEY" })

const callWith = upstreamCallFor("svc/gemini-like", MODEL)

const setup = (overrides: Partial<ProviderConfig> = {}) =>
  Effect.gen(function*() {
    const upstream = yield* acquireFakeGemini
    const adapter = yield* makeAdapter(plugin, providerAt(upstream.baseUrl, overrides), env)
    return { upstream, adapter }
  })

const lastBody = (upstream: FakeGemini) => upstream.requests.at(-1)!.body

const collect = (call: UpstreamCall, adapter: Effect.Effect.Success<ReturnType<typeof setup>>["adapter"]) =>
  Effect.scoped(Effect.flatMap(adapter.stream(call), (stream) => Effect.map(Stream.runCollect(stream), Chunk.toArray)))

/** A stream's chunks folded back into the completion they describe. */
const reassemble = (chunks: ReadonlyArray<ChatChunk>) => {
  let content: string | null = null
  const calls: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }> = []
  let finish: string | null = null
  for (const chunk of chunks) {
    for (const choice of chunk.choices) {
      if (choice.delta.content) content = (content ?? "") + choice.delta.content
      for (const delta of choice.delta.tool_calls ?? []) {
        const call = (calls[delta.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } })
        call.id = delta.id ?? call.id
        call.function.name += delta.function?.name ?? ""
        call.function.arguments += delta.function?.arguments ?? ""
      }
      finish = choice.finish_reason ?? finish
    }
  }
  return { content, calls, finish, usage: chunks.at(-1)?.usage }
}

const messageOf = (completion: UpstreamCompletion) => completion.choices[0].message

const weather: FunctionTool = {
  type: "function",
  function: {
    name: "weather",
    description: "Weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
}

describe("gemini plugin: requests", () => {
  it.scopedLive("sends system instructions and merged user/model turns to :generateContent with the key header", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      yield* adapter.complete(callWith({
        messages: [
          { role: "system", content: "Be brief." },
          { role: "developer", content: [{ type: "text", text: "Use metric units." }] },
          { role: "user", content: "hi" },
          { role: "user", content: [{ type: "text", text: "again" }] },
          { role: "assistant", content: "hello" },
          { role: "assistant", content: [{ type: "text", text: "how can I help" }] },
          { role: "user", content: "bye" }
        ]
      }))
      const [sent] = upstream.requests
      expect(sent.path).toBe(`/v1beta/models/${MODEL}:generateContent`)
      expect(sent.path).not.toContain(KEY)
      expect(sent.path).not.toContain("key=")
      expect(sent.headers["x-goog-api-key"]).toBe(KEY)
      expect(sent.headers.authorization).toBeUndefined()
      expect(sent.body).toEqual({
        systemInstruction: { parts: [{ text: "Be brief." }, { text: "Use metric units." }] },
        contents: [
          { role: "user", parts: [{ text: "hi" }, { text: "again" }] },
          { role: "model", parts: [{ text: "hello" }, { text: "how can I help" }] },
          { role: "user", parts: [{ text: "bye" }] }
        ]
      })
    }))

  it.scopedLive("sends no key header when the provider names no key, and accepts a models/ path as the model", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ apiKeyEnv: undefined })
      yield* adapter.complete(callWith({}, `models/${MODEL}`))
      expect(upstream.requests[0].headers["x-goog-api-key"]).toBeUndefined()
      expect(upstream.requests[0].path).toBe(`/v1beta/models/${MODEL}:generateContent`)
    }))

  it.scoped("defaults to Google's endpoint without a baseUrl", () =>
    Effect.gen(function*() {
      const adapter = yield* makeAdapter(plugin, providerAt(undefined), env)
      expect(adapter.embed).toBeDefined()
    }))

  it.scopedLive("translates a tool round trip, recovering function names from tool_call_id", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const completion = yield* adapter.complete(callWith({
        tools: [weather],
        messages: [
          { role: "user", content: "weather in Paris and Oslo?" },
          {
            role: "assistant",
            content: "Looking it up.",
            tool_calls: [
              { id: "call_a", type: "function", function: { name: "weather", arguments: "{\"city\":\"Paris\"}" } },
              { id: "call_b", type: "function", function: { name: "clock", arguments: "" } }
            ]
          },
          { role: "tool", tool_call_id: "call_a", content: "{\"temp\":20}" },
          { role: "tool", tool_call_id: "call_b", content: [{ type: "text", text: "noon" }] },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_a", type: "function", function: { name: "weather", arguments: "{\"city\":\"Oslo\"}" } }]
          },
          // A reused id names the latest call.
          { role: "tool", tool_call_id: "call_a", content: "42" }
        ]
      }))
      const signature = "skip_thought_signature_validator"
      expect(lastBody(upstream).contents).toEqual([
        { role: "user", parts: [{ text: "weather in Paris and Oslo?" }] },
        {
          role: "model",
          parts: [
            { text: "Looking it up." },
            { functionCall: { name: "weather", args: { city: "Paris" } }, thoughtSignature: signature },
            { functionCall: { name: "clock", args: {} }, thoughtSignature: signature }
          ]
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "weather", response: { temp: 20 } } },
            { functionResponse: { name: "clock", response: { result: "noon" } } }
          ]
        },
        { role: "model", parts: [{ functionCall: { name: "weather", args: { city: "Oslo" } }, thoughtSignature: signature }] },
        { role: "user", parts: [{ functionResponse: { name: "weather", response: { result: 42 } } }] }
      ])
      // The fake answers a function result in words.
      expect(messageOf(completion).content).toBe("weather said {\"result\":42}")
      expect(completion.choices[0].finish_reason).toBe("stop")
    }))

  it.scopedLive("refuses as not translatable, without calling the upstream, what Gemini cannot express", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const unknownId = yield* Effect.flip(adapter.complete(callWith({
        messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "call_zz", content: "1" }]
      })))
      expect(unknownId).toMatchObject({ _tag: "RequestNotTranslatable", reason: expect.stringContaining("call_zz") })
      const badImage = yield* Effect.flip(adapter.stream(callWith({
        messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "ftp://example.com/a.png" } }] }]
      })).pipe(Effect.scoped))
      expect(badImage).toMatchObject({ _tag: "RequestNotTranslatable", reason: expect.stringContaining("image_url") })
      const badArgs = yield* Effect.flip(adapter.complete(callWith({
        messages: [
          { role: "user", content: "x" },
          { role: "assistant", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "[1]" } }] }
        ]
      })))
      expect(badArgs).toMatchObject({ _tag: "RequestNotTranslatable", reason: expect.stringContaining("function.arguments") })
      expect(upstream.requests).toHaveLength(0)
    }))

  it.scopedLive("sends data: images inline and http(s) images as file data with a guessed type", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      yield* adapter.complete(callWith({
        messages: [{
          role: "user",
          content: [
            { type: "text", text: "what are these?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
            { type: "image_url", image_url: { url: "https://example.com/cat.webp?size=large#top", detail: "high" } },
            { type: "image_url", image_url: { url: "https://example.com/photo" } },
            { type: "image_url", image_url: { url: "http://example.com/dog.PNG" } }
          ]
        }]
      }))
      expect(lastBody(upstream).contents[0].parts).toEqual([
        { text: "what are these?" },
        { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
        { fileData: { fileUri: "https://example.com/cat.webp?size=large#top", mimeType: "image/webp" } },
        { fileData: { fileUri: "https://example.com/photo", mimeType: "image/jpeg" } },
        { fileData: { fileUri: "http://example.com/dog.PNG", mimeType: "image/png" } }
      ])
    }))

  it.scopedLive("maps sampling parameters to generationConfig and drops what Gemini has no field for", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      yield* adapter.complete(callWith({
        max_tokens: 64,
        temperature: 0.3,
        top_p: 0.9,
        stop: "END",
        n: 1,
        seed: 7,
        user: "end-user-1",
        logit_bias: { "42": -100 },
        models: ["svc/other"],
        route: "fallback",
        privacy: { class: "standard_route" }
      }))
      expect(lastBody(upstream)).toEqual({
        contents: [{ role: "user", parts: [{ text: "hello there gateway" }] }],
        generationConfig: { maxOutputTokens: 64, temperature: 0.3, topP: 0.9, stopSequences: ["END"], candidateCount: 1, seed: 7 }
      })
      yield* adapter.complete(callWith({ max_tokens: 64, max_completion_tokens: 32, stop: ["A", "B"], top_k: 40 }))
      expect(lastBody(upstream).generationConfig).toEqual({ maxOutputTokens: 32, stopSequences: ["A", "B"], topK: 40 })
    }))

  it.scopedLive("maps tool_choice to functionCallingConfig", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const cases = [
        ["auto", { mode: "AUTO" }],
        ["none", { mode: "NONE" }],
        ["required", { mode: "ANY" }],
        [{ type: "function", function: { name: "weather" } }, { mode: "ANY", allowedFunctionNames: ["weather"] }]
      ] as const
      for (const [tool_choice, expected] of cases) {
        yield* adapter.complete(callWith({ tools: [weather], tool_choice }))
        expect(lastBody(upstream).toolConfig).toEqual({ functionCallingConfig: expected })
      }
      yield* adapter.complete(callWith({ tools: [weather] }))
      expect(lastBody(upstream).toolConfig).toBeUndefined()
      expect(lastBody(upstream).tools).toEqual([{
        functionDeclarations: [{
          name: "weather",
          description: "Weather in a city",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
        }]
      }])
      // tool_choice none: the fake answers in words.
      const none = yield* adapter.complete(callWith({ tools: [weather], tool_choice: "none" }))
      expect(messageOf(none).content).toBe("hello there gateway")
    }))

  it.scopedLive("sanitises tool schemas recursively and leaves out empty parameter lists", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const parameters = {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        additionalProperties: false,
        $defs: { Address: { type: "object", additionalProperties: false, properties: { street: { type: "string" } } } },
        properties: {
          email: { type: "string", format: "email", description: "who" },
          when: { type: "string", format: "date-time" },
          note: { type: ["string", "null"] },
          kind: { const: "fixed" },
          count: { type: "integer", format: "int32", exclusiveMinimum: 0, minimum: 1 },
          home: { $ref: "#/$defs/Address" },
          tags: { type: "array", items: { type: "object", additionalProperties: { type: "string" }, properties: { k: { type: "string" } } } },
          either: { oneOf: [{ type: "string" }, { type: "number" }] },
          both: { allOf: [{ properties: { a: { type: "string" } }, required: ["a"] }, { properties: { b: { type: "string" } } }] }
        },
        required: ["email"]
      }
      yield* adapter.complete(callWith({
        tools: [
          { type: "function", function: { name: "send", parameters, strict: true } },
          { type: "function", function: { name: "ping" } },
          { type: "function", function: { name: "pong", parameters: { type: "object", properties: {}, additionalProperties: false } } }
        ],
        tool_choice: "none"
      }))
      const [send, ping, pong] = lastBody(upstream).tools[0].functionDeclarations
      expect(send).toEqual({
        name: "send",
        parameters: {
          type: "object",
          properties: {
            email: { type: "string", description: "who" },
            when: { type: "string", format: "date-time" },
            note: { type: "string", nullable: true },
            kind: { enum: ["fixed"] },
            count: { type: "integer", format: "int32", minimum: 1 },
            home: { type: "object", properties: { street: { type: "string" } } },
            tags: { type: "array", items: { type: "object", properties: { k: { type: "string" } } } },
            either: { anyOf: [{ type: "string" }, { type: "number" }] },
            both: { type: "object", properties: { a: { type: "string" }, b: { type: "string" } }, required: ["a"] }
          },
          required: ["email"]
        }
      })
      expect(ping).toEqual({ name: "ping" })
      expect(pong).toEqual({ name: "pong" })
    }))

  it.scopedLive("asks for JSON for json_object, and with a sanitised schema for json_schema", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      yield* adapter.complete(callWith({ response_format: { type: "json_object" } }))
      expect(lastBody(upstream).generationConfig).toEqual({ responseMimeType: "application/json" })
      const schema = {
        type: "object",
        additionalProperties: false,
        properties: { answer: { type: "string" }, score: { type: "number" } },
        required: ["answer", "score"]
      }
      const structured = yield* adapter.complete(callWith({
        response_format: { type: "json_schema", json_schema: { name: "a", schema, strict: true } }
      }))
      expect(lastBody(upstream).generationConfig).toEqual({
        responseMimeType: "application/json",
        responseSchema: { type: "object", properties: { answer: { type: "string" }, score: { type: "number" } }, required: ["answer", "score"] }
      })
      expect(JSON.parse(messageOf(structured).content!)).toEqual({ answer: "text", score: 1 })
      yield* adapter.complete(callWith({ response_format: { type: "text" } }))
      expect(lastBody(upstream).generationConfig).toBeUndefined()
    }))
})

describe("gemini plugin: responses", () => {
  it.scopedLive("returns text with usage (thinking counted as output), built from known fields only", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      const completion = yield* adapter.complete(callWith())
      expect(completion.object).toBe("chat.completion")
      expect(completion.model).toBe(MODEL)
      expect(completion.choices).toEqual([
        { index: 0, message: { role: "assistant", content: "hello there gateway" }, finish_reason: "stop" }
      ])
      const completionTokens = 3 + FAKE_THOUGHT_TOKENS
      expect(completion.usage).toEqual({ prompt_tokens: 4, completion_tokens: completionTokens, total_tokens: 4 + completionTokens })
      const text = JSON.stringify(completion)
      for (const secret of [FAKE_RESPONSE_ID, FAKE_MODEL_VERSION_SUFFIX, "safetyRatings", "HARM_CATEGORY", "usageMetadata"]) {
        expect(text).not.toContain(secret)
      }
    }))

  it.scopedLive("returns function calls as tool calls with generated ids", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      const completion = yield* adapter.complete(callWith({ tools: [weather] }))
      expect(completion.choices[0].finish_reason).toBe("tool_calls")
      expect(messageOf(completion)).toEqual({
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_0", type: "function", function: { name: "weather", arguments: "{\"city\":\"text\"}" } }]
      })
    }))

  it.scopedLive("numbers parallel calls, keeps text beside them and leaves thought parts out", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behaveOnce({
        raw: {
          body: JSON.stringify({
            candidates: [{
              content: {
                role: "model",
                parts: [
                  { text: "planning privately", thought: true },
                  { text: "Checking both." },
                  { functionCall: { name: "weather", args: { city: "Paris" } }, thoughtSignature: "c2ln" },
                  { functionCall: { name: "weather", args: { city: "Oslo" } } }
                ]
              },
              finishReason: "STOP"
            }]
          })
        }
      })
      const completion = yield* adapter.complete(callWith({ tools: [weather] }))
      expect(messageOf(completion)).toEqual({
        role: "assistant",
        content: "Checking both.",
        tool_calls: [
          { id: "call_0", type: "function", function: { name: "weather", arguments: "{\"city\":\"Paris\"}" } },
          { id: "call_1", type: "function", function: { name: "weather", arguments: "{\"city\":\"Oslo\"}" } }
        ]
      })
      expect(completion.choices[0].finish_reason).toBe("tool_calls")
      expect(completion.usage).toBeUndefined()
    }))

  it.scopedLive("maps finish reasons", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const cases = [
        ["STOP", "stop"],
        ["MAX_TOKENS", "length"],
        ["SAFETY", "content_filter"],
        ["RECITATION", "content_filter"],
        ["BLOCKLIST", "content_filter"],
        ["PROHIBITED_CONTENT", "content_filter"],
        ["SPII", "content_filter"],
        ["LANGUAGE", "stop"],
        ["OTHER", "stop"]
      ] as const
      for (const [finishReason, expected] of cases) {
        upstream.behaveOnce({ finishReason })
        const completion = yield* adapter.complete(callWith())
        expect([finishReason, completion.choices[0].finish_reason]).toEqual([finishReason, expected])
        upstream.behaveOnce({ finishReason })
        const chunks = yield* collect(callWith(), adapter)
        expect([finishReason, reassemble(chunks).finish]).toEqual([finishReason, expected])
      }
    }))

  it.scopedLive("answers a blocked prompt with empty content and content_filter", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ blockReason: "SAFETY" })
      const completion = yield* adapter.complete(callWith())
      expect(completion.choices).toEqual([{ index: 0, message: { role: "assistant", content: "" }, finish_reason: "content_filter" }])
      expect(completion.usage).toEqual({ prompt_tokens: 4, completion_tokens: 0, total_tokens: 4 })
      const chunks = yield* collect(callWith(), adapter)
      expect(chunks.map((c) => c.choices)).toEqual([
        [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: "content_filter" }],
        []
      ])
      expect(chunks.at(-1)!.usage).toEqual(completion.usage)
    }))
})

describe("gemini plugin: streaming", () => {
  it.scopedLive("streams text over :streamGenerateContent?alt=sse with usage on a last empty chunk", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const call = callWith({ messages: [{ role: "user", content: "a somewhat longer answer to stream" }] })
      const chunks = yield* collect(call, adapter)
      const sent = upstream.requests[0]
      expect(sent.path).toBe(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`)
      expect(sent.headers.accept).toBe("text/event-stream")
      expect(sent.headers["x-goog-api-key"]).toBe(KEY)
      expect(chunks.length).toBe(7)
      expect(chunks[0].choices[0].delta).toEqual({ role: "assistant", content: "a " })
      expect(chunks.slice(1).every((c) => c.choices[0]?.delta.role === undefined)).toBe(true)
      expect(chunks.slice(0, -2).every((c) => c.choices[0].finish_reason === null)).toBe(true)
      expect(chunks.at(-2)!.choices[0].finish_reason).toBe("stop")
      expect(chunks.at(-1)).toMatchObject({ object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 7 } })
      expect(chunks.slice(0, -1).every((c) => c.usage === undefined)).toBe(true)
      // The stream says what the JSON answer says.
      const completion = yield* adapter.complete(call)
      expect(reassemble(chunks)).toEqual({
        content: messageOf(completion).content,
        calls: [],
        finish: completion.choices[0].finish_reason,
        usage: completion.usage
      })
      const raw = JSON.stringify(chunks)
      expect(raw).not.toContain(FAKE_RESPONSE_ID)
      expect(raw).not.toContain(FAKE_MODEL_VERSION_SUFFIX)
      expect(raw).not.toContain("safetyRatings")
    }))

  it.scopedLive("streams function calls as whole tool call deltas", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      const call = callWith({ tools: [weather], tool_choice: "required" })
      const chunks = yield* collect(call, adapter)
      expect(chunks[0].choices[0]).toEqual({
        index: 0,
        delta: {
          role: "assistant",
          content: null,
          tool_calls: [{ index: 0, id: "call_0", type: "function", function: { name: "weather", arguments: "{\"city\":\"text\"}" } }]
        },
        finish_reason: "tool_calls"
      })
      const completion = yield* adapter.complete(call)
      expect(reassemble(chunks)).toEqual({
        content: null,
        calls: messageOf(completion).tool_calls,
        finish: "tool_calls",
        usage: completion.usage
      })
    }))

  it.scopedLive("numbers tool calls across frames and keeps the last usage seen", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const frame = (json: unknown) => `data: ${JSON.stringify(json)}\r\n\r\n`
      const call = (city: string) => ({ functionCall: { name: "weather", args: { city } } })
      upstream.behaveOnce({
        raw: {
          contentType: "text/event-stream",
          body: frame({ candidates: [{ content: { parts: [{ text: "thinking", thought: true }] } }], usageMetadata: { promptTokenCount: 9 } }) +
            frame({ candidates: [{ content: { parts: [call("Paris")] } }], usageMetadata: { promptTokenCount: 9 } }) +
            frame({ candidates: [{ content: { parts: [call("Oslo")] }, finishReason: "STOP" }] }) +
            frame({ usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 6, thoughtsTokenCount: 4 } })
        }
      })
      const chunks = yield* collect(callWith({ tools: [weather] }), adapter)
      const { calls, finish, usage } = reassemble(chunks)
      expect(calls.map((c) => [c.id, c.function.arguments])).toEqual([["call_0", "{\"city\":\"Paris\"}"], ["call_1", "{\"city\":\"Oslo\"}"]])
      expect(finish).toBe("tool_calls")
      expect(usage).toEqual({ prompt_tokens: 9, completion_tokens: 10, total_tokens: 19 })
      expect(chunks).toHaveLength(3)
    }))

  it.scopedLive("delivers slowly dripped frames within the idle timeout", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 500 })
      upstream.behave({ chunkDelayMs: 100 })
      const chunks = yield* collect(callWith(), adapter)
      expect(reassemble(chunks).content).toBe("hello there gateway")
    }))
})

describe("gemini plugin: failures", () => {
  it.scopedLive("maps a 500 to kind status, for both calls", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ status: 500 })
      const error = yield* Effect.flip(adapter.complete(callWith()))
      expect(error).toMatchObject({ _tag: "UpstreamFailure", kind: "status", status: 500 })
      // The log detail names the error kind, never its text (upstreams echo prompts in messages).
      expect(upstreamFailureOf(error).detail).toContain("code=500")
      expect(upstreamFailureOf(error).detail).not.toContain("fake gemini error")
      expect(yield* Effect.flip(Effect.scoped(adapter.stream(callWith())))).toMatchObject({ kind: "status", status: 500 })
    }))

  it.scopedLive("keeps Retry-After from a 429", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ status: 429, retryAfter: "7" })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "status", status: 429, retryAfterSeconds: 7 })
      expect(yield* Effect.flip(Effect.scoped(adapter.stream(callWith())))).toMatchObject({ status: 429, retryAfterSeconds: 7 })
    }))

  it.scopedLive("maps an upstream that sends no headers in time to kind timeout", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 200 })
      // undici checks its timeouts about once a second: the delay must be well past that.
      upstream.behave({ delayHeadersMs: 2_500 })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "timeout" })
      expect(yield* Effect.flip(Effect.scoped(adapter.stream(callWith())))).toMatchObject({ kind: "timeout" })
    }))

  it.scopedLive("maps a stream that stalls mid-way to kind timeout", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 200 })
      upstream.behave({ hangAfterChunks: 2 })
      const { received, error } = yield* collectUntilFailure(yield* adapter.stream(callWith()))
      expect(received).toHaveLength(2)
      expect(error).toMatchObject({ kind: "timeout" })
    }))

  it.scopedLive("maps a connection reset before the headers to kind connection", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ resetBeforeHeaders: true })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "connection" })
      expect(yield* Effect.flip(Effect.scoped(adapter.stream(callWith())))).toMatchObject({ kind: "connection" })
    }))

  it.scopedLive("fails a stream reset after k frames with kind connection, after k chunks", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ resetAfterChunks: 2 })
      const { received, error } = yield* collectUntilFailure(yield* adapter.stream(callWith()))
      expect(received.map((c) => c.choices[0].delta.content)).toEqual(["hello ", "there "])
      expect(error).toMatchObject({ kind: "connection" })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "connection" })
    }))

  it.scopedLive("maps a malformed frame to kind protocol, after the good ones", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ malformedFrameAfter: 1 })
      const { received, error } = yield* collectUntilFailure(yield* adapter.stream(callWith()))
      expect(received).toHaveLength(1)
      expect(error).toMatchObject({ kind: "protocol" })
    }))

  it.scopedLive("fails a stream that ends without a finish reason with kind protocol", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ noFinishReason: true })
      const { received, error } = yield* collectUntilFailure(yield* adapter.stream(callWith()))
      expect(received.map((c) => c.choices[0].delta.content).join("")).toBe("hello there gateway")
      expect(error).toMatchObject({ kind: "protocol", detail: "upstream stream ended without a finish reason" })
    }))

  it.scopedLive("maps malformed JSON bodies and error frames to kind protocol", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behaveOnce({ raw: { body: "{\"candidates\": [" } })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "protocol" })
      upstream.behaveOnce({ raw: { body: "{\"usageMetadata\": {\"promptTokenCount\": 1}}" } })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "protocol", detail: "response has no candidates" })
      upstream.behaveOnce({ raw: { body: "{\"error\": {\"code\": 500, \"message\": \"boom\"}}" } })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "protocol" })
      upstream.behaveOnce({
        raw: { contentType: "text/event-stream", body: "data: {\"error\": {\"code\": 503, \"message\": \"overloaded\"}}\r\n\r\n" }
      })
      const { error } = yield* collectUntilFailure(yield* adapter.stream(callWith()))
      expect(error).toMatchObject({ kind: "protocol" })
      expect(error.detail).toContain("code=503")
      expect(error.detail).not.toContain("overloaded")
    }))

  it.scopedLive("aborts the upstream request when the scope closes mid-stream", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 10_000 })
      upstream.behave({ hangAfterChunks: 2 })
      const scope = yield* Scope.make()
      const stream = yield* adapter.stream(callWith()).pipe(Scope.extend(scope))
      const pull = yield* Stream.toPull(stream).pipe(Scope.extend(scope))
      expect(Chunk.size(yield* pull)).toBeGreaterThan(0)
      expect(upstream.clientAborts()).toBe(0)
      yield* Scope.close(scope, Exit.void)
      yield* waitForAborts(upstream, 1)
      // An unread stream is released too.
      const unread = yield* Scope.make()
      yield* adapter.stream(callWith()).pipe(Scope.extend(unread))
      yield* Scope.close(unread, Exit.void)
      yield* waitForAborts(upstream, 2)
    }))

  it.scoped("rejects a provider whose api key variable is unset", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(makeAdapter(plugin, providerAt("http://127.0.0.1:9/v1beta"), {}))
      expect(error).toMatchObject({ _tag: "ProviderConfigError", field: "apiKeyEnv" })
    }))
})

describe("gemini plugin: embeddings", () => {
  it.scopedLive("embeds through :batchEmbedContents and counts the input tokens itself", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const input = ["hello world", "one two three <|endoftext|>"]
      const result = yield* adapter.embed!({ input, dimensions: 3, upstreamModel: "gemini-embedding-001" })
      const sent = upstream.requests[0]
      expect(sent.path).toBe("/v1beta/models/gemini-embedding-001:batchEmbedContents")
      expect(sent.headers["x-goog-api-key"]).toBe(KEY)
      expect(sent.body).toEqual({
        requests: input.map((text) => ({
          model: "models/gemini-embedding-001",
          content: { parts: [{ text }] },
          outputDimensionality: 3
        }))
      })
      expect(result.embeddings).toEqual([[2, 0.5, 0.5], [4, 0.5, 0.5]])
      const plain = { disallowedSpecial: new Set<string>() }
      expect(result.promptTokens).toBe(countTokens(input[0], plain) + countTokens(input[1], plain))
      yield* adapter.embed!({ input: ["x"], upstreamModel: "gemini-embedding-001" })
      expect(lastBody(upstream).requests[0]).not.toHaveProperty("outputDimensionality")
    }))

  it.scopedLive("maps a short or broken embeddings answer to kind protocol, and a 429 to status", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const call = { input: ["a", "b"], upstreamModel: "gemini-embedding-001" }
      upstream.behaveOnce({ raw: { body: JSON.stringify({ embeddings: [{ values: [1] }] }) } })
      expect(yield* Effect.flip(adapter.embed!(call))).toMatchObject({ kind: "protocol" })
      upstream.behaveOnce({ raw: { body: JSON.stringify({ embeddings: [{ values: [1] }, { values: ["x"] }] }) } })
      expect(yield* Effect.flip(adapter.embed!(call))).toMatchObject({ kind: "protocol" })
      upstream.behaveOnce({ status: 429, retryAfter: "3" })
      expect(yield* Effect.flip(adapter.embed!(call))).toMatchObject({ kind: "status", status: 429, retryAfterSeconds: 3 })
    }))
})

describe("gemini plugin: options", () => {
  const safetySettings = [{ category: "HARM_CATEGORY_DANGEROUS_CONTENT", threshold: "BLOCK_ONLY_HIGH" }]

  it.scopedLive("sends the configured safetySettings with both calls, and none when unset", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ options: { safetySettings } })
      yield* adapter.complete(callWith())
      yield* collect(callWith(), adapter)
      expect(upstream.requests.map((request) => request.body.safetySettings)).toEqual([safetySettings, safetySettings])
      const plain = yield* setup()
      yield* plain.adapter.complete(callWith())
      expect(lastBody(plain.upstream)).not.toHaveProperty("safetySettings")
    }))

  it.scopedLive("sends the configured embedding taskType with every embedding request", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ options: { embeddingTaskType: "RETRIEVAL_DOCUMENT" } })
      yield* adapter.embed!({ input: ["a", "b"], upstreamModel: "gemini-embedding-001" })
      expect(lastBody(upstream).requests.map((request: { taskType?: string }) => request.taskType)).toEqual([
        "RETRIEVAL_DOCUMENT",
        "RETRIEVAL_DOCUMENT"
      ])
    }))

  it.scoped("reads the clock through Effect: created, and a Retry-After given as a date", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2030-01-01T00:00:00Z"))
      const { adapter, upstream } = yield* setup()
      expect((yield* adapter.complete(callWith())).created).toBe(Date.parse("2030-01-01T00:00:00Z") / 1000)
      upstream.behave({ status: 429, retryAfter: "Tue, 01 Jan 2030 00:00:30 GMT" })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ status: 429, retryAfterSeconds: 30 })
    }))
})
