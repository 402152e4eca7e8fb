/** The Anthropic plugin against a fake Messages API over a real socket: translation both ways, streams, options and failures. */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Exit, Scope, Stream, TestClock } from "effect"
import { plugin } from "../plugins/providers/anthropic/index.ts"
import type { ChatChunk, ChatRequest } from "../services/Chat.ts"
import type { ProviderConfig } from "../services/Config.ts"
import type { UpstreamFailure } from "../services/Providers.ts"
import { collectUntilFailure, providerConfigFor, textOf, upstreamCallFor, waitForAborts, upstreamFailureOf, makeAdapter } from "./support/adapterHarness.ts"
import {
  acquireFakeAnthropic,
  FAKE_SIGNATURE,
  FAKE_THINKING,
  FAKE_TOOL_USE_ID,
  type FakeAnthropic
} from "./support/fakeAnthropicUpstream.ts"

const env = { ANTHROPIC_TEST_KEY: "sk-ant-test-123" }

const providerAt = providerConfigFor({ id: "fake-anthropic", plugin: "anthropic", apiKeyEnv: "ANTHROPIC_TEST_KEY" })

const callWith = upstreamCallFor("svc/claude-like", "claude-fake-9")

const setup = (overrides: Partial<ProviderConfig> = {}) =>
  Effect.gen(function*() {
    const upstream = yield* acquireFakeAnthropic
    const adapter = yield* makeAdapter(plugin, providerAt(upstream.baseUrl, overrides), env)
    return { upstream, adapter }
  })

const lastBody = (upstream: FakeAnthropic) => upstream.requests.at(-1)!.body

const collect = (stream: Stream.Stream<ChatChunk, UpstreamFailure>) =>
  Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)

const toolDeltas = (chunks: ReadonlyArray<ChatChunk>) =>
  chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []))

const weatherTool = {
  type: "function" as const,
  function: {
    name: "weather",
    description: "Current weather",
    parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city", "days"] }
  }
}

describe("anthropic plugin: request translation", () => {
  it.scopedLive("posts to /messages with the key, the API version and the system prompt on top", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      yield* adapter.complete(callWith({
        messages: [
          { role: "system", content: "Be brief." },
          { role: "developer", content: [{ type: "text", text: "Answer in English." }] },
          { role: "user", content: "first question" },
          { role: "assistant", content: "first answer" },
          { role: "user", content: "second" },
          { role: "user", content: [{ type: "text", text: "question" }] }
        ],
        temperature: 0.4,
        top_p: 0.9,
        stop: "END",
        seed: 7,
        logit_bias: { "42": -100 },
        user: "user-1",
        models: ["svc/claude-like"],
        route: "fallback",
        privacy: { class: "standard_route" }
      }))
      const [sent] = upstream.requests
      expect(sent.path).toBe("/v1/messages")
      expect(sent.headers["x-api-key"]).toBe("sk-ant-test-123")
      expect(sent.headers["anthropic-version"]).toBe("2023-06-01")
      expect(sent.headers.authorization).toBeUndefined()
      expect(sent.body).toEqual({
        model: "claude-fake-9",
        max_tokens: 4096,
        system: [{ type: "text", text: "Be brief." }, { type: "text", text: "Answer in English." }],
        messages: [
          { role: "user", content: "first question" },
          { role: "assistant", content: "first answer" },
          // Consecutive user messages become one turn.
          { role: "user", content: [{ type: "text", text: "second" }, { type: "text", text: "question" }] }
        ],
        temperature: 0.4,
        top_p: 0.9,
        stop_sequences: ["END"],
        metadata: { user_id: "user-1" }
      })
    }))

  it.scopedLive("takes max_completion_tokens or max_tokens, a single system string, and caps temperature at 1", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      yield* adapter.complete(callWith({ max_tokens: 64, temperature: 1.6, stop: ["a", "b"] }))
      expect(lastBody(upstream)).toMatchObject({ max_tokens: 64, temperature: 1, stop_sequences: ["a", "b"] })
      yield* adapter.complete(callWith({
        max_tokens: 64,
        max_completion_tokens: 32,
        messages: [{ role: "system", content: "Only one." }, { role: "user", content: "hi" }]
      }))
      expect(lastBody(upstream)).toMatchObject({ max_tokens: 32, system: "Only one." })
      expect(lastBody(upstream)).not.toHaveProperty("temperature")
      expect(lastBody(upstream)).not.toHaveProperty("stop_sequences")
    }))

  it.scopedLive("sends no x-api-key when the provider names no key variable", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ apiKeyEnv: undefined })
      yield* adapter.complete(callWith())
      expect(upstream.requests[0].headers["x-api-key"]).toBeUndefined()
      expect(upstream.requests[0].headers["anthropic-version"]).toBe("2023-06-01")
    }))

  it.scopedLive("translates a tool round trip: tool_calls to tool_use, tool messages to tool_result", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const completion = yield* adapter.complete(callWith({
        tools: [weatherTool],
        messages: [
          { role: "user", content: "weather in Paris and Oslo?" },
          {
            role: "assistant",
            content: "Checking.",
            tool_calls: [
              { id: "call_1", type: "function", function: { name: "weather", arguments: "{\"city\":\"Paris\",\"days\":1}" } },
              // An id from another upstream, with characters Anthropic refuses.
              { id: "call.2:x", type: "function", function: { name: "weather", arguments: "not json" } }
            ]
          },
          { role: "tool", tool_call_id: "call_1", content: "sunny" },
          { role: "tool", tool_call_id: "call.2:x", content: [{ type: "text", text: "rain" }] },
          { role: "user", content: "thanks, summarise" }
        ]
      }))
      expect(lastBody(upstream).messages).toEqual([
        { role: "user", content: "weather in Paris and Oslo?" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Checking." },
            { type: "tool_use", id: "call_1", name: "weather", input: { city: "Paris", days: 1 } },
            { type: "tool_use", id: "call_2_x", name: "weather", input: {} }
          ]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "call_1", content: "sunny" },
            { type: "tool_result", tool_use_id: "call_2_x", content: [{ type: "text", text: "rain" }] },
            { type: "text", text: "thanks, summarise" }
          ]
        }
      ])
      expect(lastBody(upstream).tools).toEqual([{
        name: "weather",
        description: "Current weather",
        input_schema: weatherTool.function.parameters
      }])
      // The fake answers tool results with text, as models do.
      expect(completion.choices[0].message.content).toContain("sunny")
      expect(completion.choices[0].finish_reason).toBe("stop")
    }))

  it.scopedLive("passes top_k on and sends an empty tool result without content", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      yield* adapter.complete(callWith({
        top_k: 40,
        tools: [weatherTool],
        messages: [
          { role: "user", content: "go" },
          { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "weather", arguments: "{}" } }] },
          { role: "tool", tool_call_id: "c1", content: "" }
        ]
      }))
      expect(lastBody(upstream).top_k).toBe(40)
      expect(lastBody(upstream).messages.at(-1)).toEqual({ role: "user", content: [{ type: "tool_result", tool_use_id: "c1" }] })
    }))

  it.scopedLive("sends data: images as base64 and http(s) images as url sources", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      yield* adapter.complete(callWith({
        messages: [{
          role: "user",
          content: [
            { type: "text", text: "compare" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
            { type: "image_url", image_url: { url: "https://example.com/cat.jpg", detail: "high" } },
            { type: "image_url", image_url: { url: "data:image/svg+xml,%3Csvg%2F%3E" } }
          ]
        }]
      }))
      expect(lastBody(upstream).messages[0].content).toEqual([
        { type: "text", text: "compare" },
        { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
        { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
        { type: "image", source: { type: "base64", media_type: "image/svg+xml", data: Buffer.from("<svg/>").toString("base64") } }
      ])
    }))

  it.scopedLive("refuses parts Anthropic cannot take as not translatable, without calling the upstream", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const error = yield* Effect.flip(adapter.complete(callWith({
        messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] }]
      })))
      expect(error).toMatchObject({ _tag: "RequestNotTranslatable", reason: "input_audio content parts are not supported" })
      expect(yield* Effect.flip(adapter.stream(callWith({
        messages: [{ role: "user", content: [{ type: "file", file: { file_id: "file-1" } }] }]
      })))).toMatchObject({ _tag: "RequestNotTranslatable", reason: expect.stringContaining("file_data") })
      expect(upstream.requests).toHaveLength(0)
    }))

  it.scopedLive("maps tool_choice auto/none/required/named and parallel_tool_calls", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const cases: Array<[Partial<ChatRequest>, unknown]> = [
        [{}, undefined],
        [{ tool_choice: "auto" }, { type: "auto" }],
        [{ tool_choice: "none" }, { type: "none" }],
        [{ tool_choice: "required" }, { type: "any" }],
        [{ tool_choice: { type: "function", function: { name: "weather" } } }, { type: "tool", name: "weather" }],
        [{ parallel_tool_calls: false }, { type: "auto", disable_parallel_tool_use: true }],
        [{ tool_choice: "required", parallel_tool_calls: false }, { type: "any", disable_parallel_tool_use: true }]
      ]
      for (const [request, expected] of cases) {
        yield* adapter.complete(callWith({ tools: [weatherTool], ...request }))
        expect(lastBody(upstream).tool_choice).toEqual(expected)
      }
      // Without tools there is nothing to choose from.
      yield* adapter.complete(callWith({ tool_choice: "auto" }))
      expect(lastBody(upstream)).not.toHaveProperty("tool_choice")
      expect(lastBody(upstream)).not.toHaveProperty("tools")
    }))

  it.scopedLive("serves json_schema through a forced tool and answers with its input as content", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const schema = { type: "object", properties: { answer: { type: "string" }, score: { type: "number" } }, required: ["answer", "score"] }
      const completion = yield* adapter.complete(callWith({
        response_format: { type: "json_schema", json_schema: { name: "verdict", description: "The verdict", schema } }
      }))
      expect(lastBody(upstream).tools).toEqual([{ name: "json_answer", description: "The verdict", input_schema: schema }])
      expect(lastBody(upstream).tool_choice).toEqual({ type: "tool", name: "json_answer", disable_parallel_tool_use: true })
      const message = completion.choices[0].message
      expect(JSON.parse(message.content!)).toEqual({ answer: "text", score: 1 })
      expect(message.tool_calls).toBeUndefined()
      expect(completion.choices[0].finish_reason).toBe("stop")

      const object = yield* adapter.complete(callWith({ response_format: { type: "json_object" } }))
      expect(lastBody(upstream).tools[0].input_schema).toEqual({ type: "object" })
      expect(JSON.parse(object.choices[0].message.content!)).toEqual({})
    }))

  it.scopedLive("with caller tools too, lets the model pick any tool; a named caller tool wins over the format", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const format = { type: "json_schema" as const, json_schema: { name: "n", schema: { type: "object", properties: {} } } }
      const clash = { type: "function" as const, function: { name: "json_answer" } }
      const both = yield* adapter.complete(callWith({ tools: [weatherTool, clash], response_format: format }))
      expect(lastBody(upstream).tools.map((t: any) => t.name)).toEqual(["weather", "json_answer", "_json_answer"])
      expect(lastBody(upstream).tool_choice).toEqual({ type: "any" })
      // The fake calls the first tool: a real call for the caller to run.
      expect(both.choices[0].finish_reason).toBe("tool_calls")
      expect(both.choices[0].message.tool_calls![0].function.name).toBe("weather")

      yield* adapter.complete(callWith({ tools: [weatherTool], tool_choice: "none", response_format: format }))
      expect(lastBody(upstream).tool_choice).toEqual({ type: "tool", name: "json_answer", disable_parallel_tool_use: true })

      yield* adapter.complete(callWith({
        tools: [weatherTool],
        tool_choice: { type: "function", function: { name: "weather" } },
        response_format: format
      }))
      expect(lastBody(upstream).tools).toHaveLength(1)
      expect(lastBody(upstream).tool_choice).toEqual({ type: "tool", name: "weather" })
    }))
})

describe("anthropic plugin: response translation", () => {
  it.scopedLive("returns text with usage, and hides thinking", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ thinking: true })
      const completion = yield* adapter.complete(callWith())
      expect(completion.object).toBe("chat.completion")
      expect(completion.choices).toEqual([{
        index: 0,
        message: { role: "assistant", content: "hello there gateway" },
        finish_reason: "stop"
      }])
      // 3 words + 3 framing tokens in, 3 pieces out.
      expect(completion.usage).toEqual({ prompt_tokens: 6, completion_tokens: 3, total_tokens: 9 })
      const text = JSON.stringify(completion)
      expect(text).not.toContain(FAKE_THINKING)
      expect(text).not.toContain(FAKE_SIGNATURE)
    }))

  it.scopedLive("counts cache reads and writes as prompt tokens", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ cacheReadTokens: 100 })
      const completion = yield* adapter.complete(callWith())
      expect(completion.usage).toEqual({ prompt_tokens: 106, completion_tokens: 3, total_tokens: 109 })
      const streamed = yield* collect(yield* adapter.stream(callWith()))
      expect(streamed.at(-1)!.usage).toEqual({ prompt_tokens: 106, completion_tokens: 3, total_tokens: 109 })
    }))

  it.scopedLive("returns tool calls with caller-style ids and JSON arguments", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      const completion = yield* adapter.complete(callWith({ tools: [weatherTool] }))
      expect(completion.choices[0]).toEqual({
        index: 0,
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_fake_01ABC", type: "function", function: { name: "weather", arguments: "{\"city\":\"text\",\"days\":1}" } }]
        },
        finish_reason: "tool_calls"
      })
      expect(JSON.stringify(completion)).not.toContain(FAKE_TOOL_USE_ID)
    }))

  it.scopedLive("maps stop reasons: stop_sequence and end_turn to stop, max_tokens to length, refusal to content_filter", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const stopped = yield* adapter.complete(callWith({
        messages: [{ role: "user", content: "one two STOP three" }],
        stop: ["STOP"]
      }))
      expect(stopped.choices[0]).toMatchObject({ message: { content: "one two " }, finish_reason: "stop" })
      const cut = yield* adapter.complete(callWith({
        messages: [{ role: "user", content: "one two three four" }],
        max_completion_tokens: 2
      }))
      expect(cut.choices[0]).toMatchObject({ message: { content: "one two " }, finish_reason: "length" })
      upstream.behaveOnce({
        raw: {
          body: JSON.stringify({
            id: "msg_1",
            type: "message",
            role: "assistant",
            content: [],
            stop_reason: "refusal",
            usage: { input_tokens: 5, output_tokens: 0 }
          })
        }
      })
      const refused = yield* adapter.complete(callWith())
      expect(refused.choices[0]).toMatchObject({ message: { content: "" }, finish_reason: "content_filter" })
    }))

  it.scopedLive("reports no usage when the upstream gave none (the gateway counts then)", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behaveOnce({
        raw: { body: JSON.stringify({ id: "m", type: "message", content: [{ type: "text", text: "hi" }], stop_reason: "end_turn" }) }
      })
      const completion = yield* adapter.complete(callWith())
      expect(completion.usage).toBeUndefined()
      expect(completion.choices[0].message.content).toBe("hi")
    }))
})

describe("anthropic plugin: streaming", () => {
  it.scopedLive("streams text that reassembles to the JSON answer, with usage on the last chunk", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ thinking: true })
      const whole = yield* adapter.complete(callWith())
      const chunks = yield* collect(yield* adapter.stream(callWith({ stream: true, stream_options: { include_usage: false } })))
      const sent = upstream.requests.at(-1)!
      expect(sent.body.stream).toBe(true)
      expect(sent.body).not.toHaveProperty("stream_options")
      expect(sent.headers.accept).toBe("text/event-stream")
      expect(chunks[0].choices[0].delta).toEqual({ role: "assistant", content: "" })
      expect(chunks.filter((c) => c.choices[0]?.delta.role !== undefined)).toHaveLength(1)
      expect(textOf(chunks)).toBe(whole.choices[0].message.content)
      expect(chunks.at(-2)!.choices[0]).toEqual({ index: 0, delta: {}, finish_reason: "stop" })
      expect(chunks.at(-1)).toMatchObject({ object: "chat.completion.chunk", choices: [], usage: whole.usage })
      expect(chunks.slice(0, -1).every((c) => c.usage === undefined)).toBe(true)
      expect(new Set(chunks.map((c) => c.id)).size).toBe(1)
      const raw = JSON.stringify(chunks)
      expect(raw).not.toContain(FAKE_THINKING)
      expect(raw).not.toContain(FAKE_SIGNATURE)
    }))

  it.scopedLive("streams tool call deltas that reassemble to the JSON answer's arguments", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      const whole = yield* adapter.complete(callWith({ tools: [weatherTool] }))
      const chunks = yield* collect(yield* adapter.stream(callWith({ tools: [weatherTool] })))
      const deltas = toolDeltas(chunks)
      expect(deltas[0]).toEqual({ index: 0, id: "call_fake_01ABC", type: "function", function: { name: "weather", arguments: "" } })
      expect(deltas.length).toBeGreaterThan(2)
      expect(deltas.every((d) => d.index === 0)).toBe(true)
      expect(deltas.map((d) => d.function?.arguments ?? "").join("")).toBe(whole.choices[0].message.tool_calls![0].function.arguments)
      expect(chunks.at(-2)!.choices[0].finish_reason).toBe("tool_calls")
      expect(chunks.at(-1)!.usage).toEqual(whole.usage)
      expect(JSON.stringify(chunks)).not.toContain(FAKE_TOOL_USE_ID)
    }))

  it.scopedLive("streams structured output as content, finishing with stop", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      const request = {
        response_format: {
          type: "json_schema" as const,
          json_schema: { name: "n", schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } }
        }
      }
      const whole = yield* adapter.complete(callWith(request))
      const chunks = yield* collect(yield* adapter.stream(callWith(request)))
      expect(textOf(chunks)).toBe(whole.choices[0].message.content)
      expect(JSON.parse(textOf(chunks))).toEqual({ n: 1 })
      expect(toolDeltas(chunks)).toEqual([])
      expect(chunks.at(-2)!.choices[0].finish_reason).toBe("stop")
    }))

  it.scopedLive("numbers tool calls by position, skips pings and unknown blocks, and fills in empty arguments", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const events = [
        { type: "message_start", message: { id: "msg_x", usage: { input_tokens: 10, output_tokens: 1 } } },
        { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } },
        { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "secret" } },
        { type: "content_block_stop", index: 0 },
        { type: "ping" },
        { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
        { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "Let me check." } },
        { type: "content_block_stop", index: 1 },
        { type: "content_block_start", index: 2, content_block: { type: "tool_use", id: "toolu_A", name: "a", input: {} } },
        { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "" } },
        { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "{\"x\":" } },
        { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "1}" } },
        { type: "content_block_stop", index: 2 },
        { type: "content_block_start", index: 3, content_block: { type: "tool_use", id: "toolu_B", name: "b", input: {} } },
        { type: "content_block_stop", index: 3 },
        { type: "some_future_event" },
        { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 12 } },
        { type: "message_stop" }
      ]
      upstream.behaveOnce({
        raw: {
          contentType: "text/event-stream",
          body: events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("")
        }
      })
      const chunks = yield* collect(yield* adapter.stream(callWith()))
      expect(textOf(chunks)).toBe("Let me check.")
      expect(toolDeltas(chunks)).toEqual([
        { index: 0, id: "call_A", type: "function", function: { name: "a", arguments: "" } },
        { index: 0, function: { arguments: "{\"x\":" } },
        { index: 0, function: { arguments: "1}" } },
        { index: 1, id: "call_B", type: "function", function: { name: "b", arguments: "" } },
        { index: 1, function: { arguments: "{}" } }
      ])
      expect(chunks.at(-2)!.choices[0].finish_reason).toBe("tool_calls")
      expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: 10, completion_tokens: 12, total_tokens: 22 })
      expect(JSON.stringify(chunks)).not.toContain("secret")
    }))
})

describe("anthropic plugin: failures", () => {
  it.scopedLive("maps a 500 to kind status 500, for both calls", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ status: 500 })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ _tag: "UpstreamFailure", kind: "status", status: 500 })
      expect(yield* Effect.flip(adapter.stream(callWith()))).toMatchObject({ kind: "status", status: 500 })
    }))

  it.scopedLive("keeps Retry-After of a 429", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ status: 429, retryAfter: 7 })
      const error = yield* Effect.flip(adapter.complete(callWith()))
      expect(error).toMatchObject({ kind: "status", status: 429, retryAfterSeconds: 7 })
      expect(upstreamFailureOf(error).detail).toContain("rate_limit_error")
      expect(yield* Effect.flip(adapter.stream(callWith()))).toMatchObject({ kind: "status", status: 429, retryAfterSeconds: 7 })
    }))

  it.scopedLive("passes the upstream's refusal of a bad body on as a 400", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      // A conversation that opens with the assistant: the real API refuses it.
      const error = yield* Effect.flip(adapter.complete(callWith({ messages: [{ role: "assistant", content: "hi" }] })))
      expect(error).toMatchObject({ kind: "status", status: 400 })
      // The log detail names the error kind, never its text (upstreams echo prompts in messages).
      expect(upstreamFailureOf(error).detail).toContain("type=invalid_request_error")
      expect(upstreamFailureOf(error).detail).not.toContain("roles must alternate")
    }))

  it.scopedLive("maps headers that come too late to kind timeout", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 200 })
      // undici checks these timeouts on ~0.5 s ticks, so a 200 ms timeout may take up to ~1 s to fire.
      upstream.behave({ delayHeadersMs: 3_000 })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "timeout" })
      expect(yield* Effect.flip(adapter.stream(callWith()))).toMatchObject({ kind: "timeout" })
    }))

  it.scopedLive("maps a stream that stalls to kind timeout", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 200 })
      upstream.behave({ hangAfterChunks: 4 })
      const { error, received } = yield* collectUntilFailure(yield* adapter.stream(callWith()))
      expect(error).toMatchObject({ kind: "timeout" })
      expect(textOf(received)).toBe("hello ")
    }))

  it.scopedLive("maps a connection reset before the headers to kind connection", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ resetBeforeHeaders: true })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "connection" })
      expect(yield* Effect.flip(adapter.stream(callWith()))).toMatchObject({ kind: "connection" })
    }))

  it.scopedLive("fails a stream reset after k events once their chunks are delivered", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      // message_start, content_block_start, ping, one text delta: then the socket dies.
      upstream.behave({ resetAfterChunks: 4 })
      const { error, received } = yield* collectUntilFailure(yield* adapter.stream(callWith()))
      expect(["connection", "protocol"]).toContain(error.kind)
      expect(received.map((c) => c.choices[0]?.delta.content)).toEqual(["", "hello "])
      // A JSON body cut mid-way.
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "connection" })
    }))

  it.scopedLive("maps a malformed frame to kind protocol after the chunks before it", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ malformedFrameAfter: 5 })
      const { error, received } = yield* collectUntilFailure(yield* adapter.stream(callWith()))
      expect(error).toMatchObject({ kind: "protocol" })
      expect(textOf(received)).toBe("hello there ")
    }))

  it.scopedLive("maps a stream that ends without message_stop, and an error event, to kind protocol", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const sse = (...events: Array<object>) => ({
        raw: { contentType: "text/event-stream", body: events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") }
      })
      const start = { type: "message_start", message: { id: "m", usage: { input_tokens: 1, output_tokens: 1 } } }
      const text = { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "partial" } }
      upstream.behaveOnce(sse(start, text, { type: "message_delta", delta: { stop_reason: "end_turn" } }))
      const cut = yield* collectUntilFailure(yield* adapter.stream(callWith()))
      expect(cut.error).toMatchObject({ kind: "protocol" })
      expect(textOf(cut.received)).toBe("partial")

      upstream.behaveOnce(sse(start, text, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }))
      const overloaded = yield* collectUntilFailure(yield* adapter.stream(callWith()))
      expect(overloaded.error).toMatchObject({ kind: "protocol" })
      expect(overloaded.error.detail).toContain("type=overloaded_error")
      expect(overloaded.error.detail).not.toContain("Overloaded")
    }))

  it.scopedLive("maps malformed JSON bodies and 200 error bodies to kind protocol", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behaveOnce({ raw: { body: "{\"id\": \"x\", \"content\": [" } })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "protocol" })
      upstream.behaveOnce({ raw: { body: "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"boom\"}}" } })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "protocol" })
      upstream.behaveOnce({ raw: { body: "{\"id\": \"x\", \"type\": \"message\"}" } })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "protocol" })
    }))

  it.scopedLive("aborts the upstream request when the scope closes mid-stream", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 10_000 })
      upstream.behave({ hangAfterChunks: 4 })
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
})

describe("anthropic plugin: configuration", () => {
  it.scoped("defaults the base URL to Anthropic's API", () =>
    Effect.gen(function*() {
      const adapter = yield* makeAdapter(plugin, providerAt(undefined), env)
      expect(adapter.embed).toBeUndefined()
      expect(plugin.privacyDefaults).toBeUndefined()
    }))

  it.scoped("rejects a provider whose key variable is unset, and a bad base URL", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flip(makeAdapter(plugin, providerAt("http://127.0.0.1:9/v1"), {}))).toMatchObject({
        _tag: "ProviderConfigError",
        field: "apiKeyEnv"
      })
      expect(yield* Effect.flip(makeAdapter(plugin, providerAt("http://[bad"), env))).toMatchObject({ field: "baseUrl" })
    }))
})

describe("anthropic plugin: options", () => {
  it.scopedLive("sends the configured anthropic-version, betas and default max_tokens, for both calls", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({
        options: { version: "2024-10-22", defaultMaxTokens: 1024, betas: ["pdfs-2024-09-25", "token-efficient-tools-2025-02-19"] }
      })
      yield* adapter.complete(callWith())
      yield* Effect.scoped(Effect.flatMap(adapter.stream(callWith()), collect))
      yield* adapter.complete(callWith({ max_tokens: 77 }))
      const [complete, streamed, limited] = upstream.requests
      for (const sent of [complete, streamed]) {
        expect(sent.headers["anthropic-version"]).toBe("2024-10-22")
        expect(sent.headers["anthropic-beta"]).toBe("pdfs-2024-09-25,token-efficient-tools-2025-02-19")
        expect(sent.body.max_tokens).toBe(1024)
      }
      expect(limited.body.max_tokens).toBe(77)
    }))

  it.scopedLive("sends no anthropic-beta header when no betas are configured", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      yield* adapter.complete(callWith())
      expect(upstream.requests[0].headers["anthropic-beta"]).toBeUndefined()
    }))

  it.scoped("stamps completions with the time of Effect's Clock", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(1_700_000_000_500)
      const { adapter } = yield* setup()
      expect((yield* adapter.complete(callWith())).created).toBe(1_700_000_000)
    }))
})
