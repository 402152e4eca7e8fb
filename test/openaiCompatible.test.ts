/** The OpenAI-compatible plugin against a fake upstream over a real socket: pass-through, streams, embeddings, options and failures. */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Duration, Effect, Either, Exit, Fiber, Scope, Stream } from "effect"
import { plugin } from "../plugins/providers/openaiCompatible/index.ts"
import type { ProviderConfig } from "../services/Config.ts"
import { decodeOptions } from "../services/Registry.ts"
import { providerConfigFor, upstreamCallFor, waitForAborts, upstreamFailureOf, makeAdapter } from "./support/adapterHarness.ts"
import { acquireFakeOpenAi, FAKE_FINGERPRINT, FAKE_PROVIDER_NAME } from "./support/fakeOpenAiUpstream.ts"
import { freePort as freeLoopbackPort } from "./support/gatewayProcess.ts"

const env = { FAKE_KEY: "sk-test-123" }

const providerAt = providerConfigFor({ id: "fake", plugin: "openai-compatible", apiKeyEnv: "FAKE_KEY" })

const callWith = upstreamCallFor("svc/small", "upstream-model-7b")

/** A fake upstream and an adapter pointing at it, both living in the test scope. */
const setup = (overrides: Partial<ProviderConfig> = {}) =>
  Effect.gen(function*() {
    const upstream = yield* acquireFakeOpenAi
    const adapter = yield* makeAdapter(plugin, providerAt(upstream.baseUrl, overrides), env)
    return { upstream, adapter }
  })

const freePort = Effect.promise(freeLoopbackPort)

describe("openai-compatible plugin", () => {
  it.scopedLive("returns a JSON completion", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      const completion = yield* adapter.complete(callWith())
      expect(completion.object).toBe("chat.completion")
      expect(completion.choices[0].message).toEqual({ role: "assistant", content: "hello there gateway", refusal: null })
      expect(completion.choices[0].finish_reason).toBe("stop")
      expect(completion.usage).toEqual({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 })
    }))

  it.scopedLive("forwards the request body with the model renamed and our extensions removed", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      yield* adapter.complete(callWith({
        temperature: 0.3,
        top_p: 0.9,
        seed: 7,
        stop: ["END"],
        max_tokens: 64,
        logit_bias: { "42": -100 },
        models: ["svc/small", "svc/big"],
        route: "fallback",
        privacy: { class: "standard_route" }
      }))
      const [sent] = upstream.requests
      expect(sent.path).toBe("/v1/chat/completions")
      expect(sent.headers.authorization).toBe("Bearer sk-test-123")
      expect(sent.body).toEqual({
        model: "upstream-model-7b",
        messages: [{ role: "user", content: "hello there gateway" }],
        temperature: 0.3,
        top_p: 0.9,
        seed: 7,
        stop: ["END"],
        max_tokens: 64,
        logit_bias: { "42": -100 }
      })
    }))

  it.scopedLive("sends no authorization header when the provider has no key", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ apiKeyEnv: undefined })
      yield* adapter.complete(callWith())
      expect(upstream.requests[0].headers.authorization).toBeUndefined()
    }))

  it.scopedLive("strips fields the upstream adds", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      const completion = yield* adapter.complete(callWith())
      const text = JSON.stringify(completion)
      expect(text).not.toContain(FAKE_FINGERPRINT)
      expect(text).not.toContain(FAKE_PROVIDER_NAME)
      expect(text).not.toContain("reasoning_content")
      expect(text).not.toContain("native_finish_reason")
      expect(text).not.toContain("prompt_tokens_details")
    }))

  it.scopedLive("returns tool calls and structured output", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      const parameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
      const withTool = yield* adapter.complete(callWith({
        tools: [{ type: "function", function: { name: "weather", parameters } }]
      }))
      expect(withTool.choices[0].finish_reason).toBe("tool_calls")
      expect(withTool.choices[0].message.tool_calls).toEqual([
        { id: "call_fake_1", type: "function", function: { name: "weather", arguments: "{\"city\":\"text\"}" } }
      ])
      const structured = yield* adapter.complete(callWith({
        response_format: { type: "json_schema", json_schema: { name: "n", schema: { ...parameters, required: ["city"] } } }
      }))
      expect(JSON.parse(structured.choices[0].message.content!)).toEqual({ city: "text" })
    }))

  it.scopedLive("streams chunks with usage and asks the upstream for usage", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const stream = yield* adapter.stream(callWith({ stream: true, stream_options: { include_usage: false } }))
      const chunks = Chunk.toReadonlyArray(yield* Stream.runCollect(stream))
      expect(upstream.requests[0].body).toMatchObject({ stream: true, stream_options: { include_usage: true } })
      expect(upstream.requests[0].headers.accept).toBe("text/event-stream")
      const text = chunks.flatMap((c) => c.choices.map((choice) => choice.delta.content ?? "")).join("")
      expect(text).toBe("hello there gateway")
      expect(chunks[0].choices[0].delta.role).toBe("assistant")
      expect(chunks.at(-2)!.choices[0].finish_reason).toBe("stop")
      expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 } })
      const raw = JSON.stringify(chunks)
      expect(raw).not.toContain(FAKE_PROVIDER_NAME)
      expect(raw).not.toContain(FAKE_FINGERPRINT)
      expect(raw).not.toContain("native_finish_reason")
    }))

  it.scopedLive("streams tool call deltas", () =>
    Effect.gen(function*() {
      const { adapter } = yield* setup()
      const parameters = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
      const stream = yield* adapter.stream(callWith({ tools: [{ type: "function", function: { name: "count", parameters } }] }))
      const chunks = Chunk.toReadonlyArray(yield* Stream.runCollect(stream))
      const deltas = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []))
      expect(deltas[0]).toEqual({ index: 0, id: "call_fake_1", type: "function", function: { name: "count", arguments: "" } })
      expect(deltas.map((d) => d.function?.arguments ?? "").join("")).toBe("{\"n\":1}")
    }))

  it.scopedLive("ignores keep-alive comment frames", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ keepAliveComments: true })
      const stream = yield* adapter.stream(callWith())
      const chunks = Chunk.toReadonlyArray(yield* Stream.runCollect(stream))
      expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("hello there gateway")
      expect(chunks.at(-1)!.usage?.total_tokens).toBe(7)
    }))

  it.scopedLive("maps a non-2xx answer to kind status, for both calls", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ status: 429 })
      const completeError = yield* Effect.flip(adapter.complete(callWith()))
      expect(completeError).toMatchObject({ _tag: "UpstreamFailure", kind: "status", status: 429 })
      // The log detail names the error kind, never its text (upstreams echo prompts in messages).
      expect(upstreamFailureOf(completeError).detail).toContain("type=fake_error")
      expect(upstreamFailureOf(completeError).detail).not.toContain("fake upstream error")
      const streamError = yield* Effect.flip(adapter.stream(callWith()))
      expect(streamError).toMatchObject({ kind: "status", status: 429 })
    }))

  it.scopedLive("maps a slow upstream to kind timeout", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 200 })
      // Far beyond the 200 ms timeout, so a loaded machine cannot let the answer arrive first.
      upstream.behave({ delayHeadersMs: 5_000 })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "timeout" })
      expect(yield* Effect.flip(adapter.stream(callWith()))).toMatchObject({ kind: "timeout" })
    }))

  it.scopedLive("maps a stream that stalls mid-way to kind timeout", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 200 })
      upstream.behave({ hangAfterChunks: 2 })
      const stream = yield* adapter.stream(callWith())
      const error = yield* Effect.flip(Stream.runDrain(stream))
      expect(error).toMatchObject({ kind: "timeout" })
    }))

  it.scopedLive("delivers slowly dripped chunks within the idle timeout", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 500 })
      upstream.behave({ chunkDelayMs: 100 })
      const chunks = yield* Stream.runCollect(yield* adapter.stream(callWith()))
      expect(Chunk.size(chunks)).toBe(6)
    }))

  it.scopedLive("maps a refused connection to kind connection", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const adapter = yield* makeAdapter(plugin, providerAt(`http://127.0.0.1:${port}/v1`), env)
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "connection" })
      expect(yield* Effect.flip(adapter.stream(callWith()))).toMatchObject({ kind: "connection" })
    }))

  it.scopedLive("maps malformed JSON and malformed SSE to kind protocol", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behaveOnce({ raw: { body: "{\"id\": \"x\", \"choices\": [" } })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "protocol" })
      upstream.behaveOnce({ raw: { body: "{\"id\": \"x\", \"choices\": []}" } })
      expect(yield* Effect.flip(adapter.complete(callWith()))).toMatchObject({ kind: "protocol" })
      upstream.behaveOnce({ raw: { body: "data: {oops\n\n", contentType: "text/event-stream" } })
      const broken = yield* adapter.stream(callWith())
      expect(yield* Effect.flip(Stream.runDrain(broken))).toMatchObject({ kind: "protocol" })
      upstream.behaveOnce({ raw: { body: "data: {\"id\":\"x\",\"choices\":[]}\n\n", contentType: "text/event-stream" } })
      const truncated = yield* adapter.stream(callWith())
      expect(yield* Effect.flip(Stream.runDrain(truncated))).toMatchObject({ kind: "protocol" })
    }))

  it.scopedLive("delivers the good chunks that arrived in the same read as a malformed frame, then fails", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      const frame = (content: string) =>
        `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", created: 1, model: "m",
          choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`
      // One write: both good frames and the broken one reach us in one network read.
      upstream.behaveOnce({ raw: { body: frame("hello ") + frame("there") + "data: {oops\n\n", contentType: "text/event-stream" } })
      const received: Array<string> = []
      const error = yield* Effect.flip(Stream.runForEach(
        yield* adapter.stream(callWith()),
        (chunk) => Effect.sync(() => received.push(chunk.choices[0]?.delta.content ?? ""))
      ))
      expect(error).toMatchObject({ kind: "protocol" })
      expect(received.join("")).toBe("hello there")
    }))

  it.scopedLive("aborts the upstream request when the scope closes mid-stream", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ hangAfterChunks: 2 })
      const scope = yield* Scope.make()
      const stream = yield* adapter.stream(callWith()).pipe(Scope.extend(scope))
      const pull = yield* Stream.toPull(stream).pipe(Scope.extend(scope))
      const first = yield* pull
      expect(Chunk.size(first)).toBeGreaterThan(0)
      expect(upstream.clientAborts()).toBe(0)
      yield* Scope.close(scope, Exit.void)
      yield* waitForAborts(upstream, 1)
      // An unread stream is released too.
      const unread = yield* Scope.make()
      yield* adapter.stream(callWith()).pipe(Scope.extend(unread))
      yield* Scope.close(unread, Exit.void)
      yield* waitForAborts(upstream, 2)
    }))

  it.scopedLive("aborts at once when the scope closes while waiting for upstream data", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 10_000 })
      upstream.behave({ hangAfterChunks: 2 })
      const scope = yield* Scope.make()
      const stream = yield* adapter.stream(callWith()).pipe(Scope.extend(scope))
      const received = yield* Deferred.make<void>()
      yield* stream.pipe(Stream.runForEach(() => Deferred.succeed(received, undefined)), Effect.forkIn(scope))
      yield* Deferred.await(received)
      yield* Effect.sleep("50 millis")
      const [elapsed] = yield* Effect.timed(Scope.close(scope, Exit.void))
      expect(Duration.toMillis(elapsed)).toBeLessThan(1_000)
      yield* waitForAborts(upstream, 1)
    }))

  it.scopedLive("aborts the upstream request when a JSON completion is interrupted, waiting for headers or mid-body", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 10_000 })
      upstream.behave({ delayHeadersMs: 5_000 })
      const waiting = yield* Effect.fork(adapter.complete(callWith()))
      yield* Effect.sleep("100 millis")
      yield* Fiber.interrupt(waiting)
      yield* waitForAborts(upstream, 1)
      // Half of the answer came and the rest never does.
      upstream.behave({ hangAfterChunks: 0 })
      const reading = yield* Effect.fork(adapter.complete(callWith()))
      yield* Effect.sleep("100 millis")
      yield* Fiber.interrupt(reading)
      yield* waitForAborts(upstream, 2)
    }))

  it.scopedLive("reuses the connection across calls", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      // undici frees a socket a moment after its response ends; the pauses avoid that race.
      yield* adapter.complete(callWith())
      yield* Effect.sleep("30 millis")
      yield* Effect.scoped(Effect.flatMap(adapter.stream(callWith()), Stream.runDrain))
      yield* Effect.sleep("30 millis")
      yield* Effect.scoped(Effect.flatMap(adapter.stream(callWith({ tools: [{ type: "function", function: { name: "t" } }] })), Stream.runDrain))
      yield* Effect.sleep("30 millis")
      yield* adapter.complete(callWith())
      expect(upstream.connections()).toBe(1)
      expect(upstream.clientAborts()).toBe(0)
    }))

  it.scopedLive("lets the response end after [DONE] so its connection is reused", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup()
      upstream.behave({ endDelayAfterDoneMs: 50 })
      // The stream ends at [DONE]; the rest of the response is drained after it (streamedAnswer.ts), not cut off.
      yield* Effect.scoped(Effect.flatMap(adapter.stream(callWith()), Stream.runDrain))
      yield* Effect.sleep("100 millis")
      yield* Effect.scoped(Effect.flatMap(adapter.stream(callWith()), Stream.runDrain))
      expect(upstream.connections()).toBe(1)
      expect(upstream.clientAborts()).toBe(0)
    }))

  it.scopedLive("ends the stream soon after [DONE] even if the upstream never ends the response", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ timeoutMs: 5_000 })
      upstream.behave({ endDelayAfterDoneMs: 60_000 })
      const chunks = yield* Effect.scoped(Effect.flatMap(adapter.stream(callWith()), Stream.runCollect)).pipe(
        Effect.timeout("2 seconds")
      )
      expect(Chunk.last(chunks).pipe((last) => last._tag === "Some" && last.value.usage?.total_tokens)).toBe(7)
      yield* waitForAborts(upstream, 1)
    }))

  it.scoped("rejects a provider without baseUrl", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(makeAdapter(plugin, providerAt(undefined), env))
      expect(error).toMatchObject({ _tag: "ProviderConfigError", field: "baseUrl" })
    }))

  it.scoped("rejects a provider whose api key variable is unset or empty", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(makeAdapter(plugin, providerAt("http://127.0.0.1:9/v1"), {}))
      expect(missing).toMatchObject({
        _tag: "ProviderConfigError",
        field: "apiKeyEnv",
        reason: "environment variable FAKE_KEY is not set"
      })
      const empty = yield* Effect.flip(makeAdapter(plugin, providerAt("http://127.0.0.1:9/v1"), { FAKE_KEY: "" }))
      expect(empty).toMatchObject({ field: "apiKeyEnv" })
    }))
})

describe("openai-compatible plugin: options", () => {
  const options = { organization: "org-42", project: "proj-7", headers: { "X-Route-Tag": "blue", "x-vendor-version": "3" } }

  it.scopedLive("sends the organization, project and static headers with chat, streams and embeddings", () =>
    Effect.gen(function*() {
      const { adapter, upstream } = yield* setup({ options })
      yield* adapter.complete(callWith())
      yield* Effect.scoped(Effect.flatMap(adapter.stream(callWith()), Stream.runDrain))
      yield* adapter.embed!({ input: ["a"], upstreamModel: "embed-1" })
      expect(upstream.requests).toHaveLength(3)
      for (const sent of upstream.requests) {
        expect(sent.headers).toMatchObject({
          "openai-organization": "org-42",
          "openai-project": "proj-7",
          "x-route-tag": "blue",
          "x-vendor-version": "3",
          authorization: "Bearer sk-test-123"
        })
      }
    }))

  it("refuses static headers that would replace the plugin's own, naming the field", () => {
    const refused = decodeOptions(plugin, { headers: { Authorization: "Bearer other" } })
    expect(Either.isLeft(refused) && refused.left.field).toBe("headers.Authorization")
    expect(Either.isRight(decodeOptions(plugin, {}))).toBe(true)
  })
})
