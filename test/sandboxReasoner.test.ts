/** The sandbox's reasoning model: thinking before the answer, billed as output, sharing the token limit, streamed first. */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { plugin } from "../plugins/providers/sandbox/index.ts"
import type { ChatRequest } from "../services/Chat.ts"
import { makeAdapter } from "./support/adapterHarness.ts"

const provider = { id: "sandbox", plugin: "sandbox", timeoutMs: 60_000, deployments: [] }
const adapter = makeAdapter(plugin, provider, {}).pipe(Effect.scoped)
type Body = Partial<ChatRequest> & Pick<ChatRequest, "messages">
const call = (request: Body, upstreamModel = "sandbox-reasoner") => ({
  request: { model: "svc/sandbox-reasoner", ...request },
  upstreamModel
})
const complete = (request: Body, upstreamModel?: string) =>
  Effect.flatMap(adapter, (a) => a.complete(call(request, upstreamModel)))
const user = [{ role: "user" as const, content: "Why is the sky blue?" }]

describe("sandbox reasoner", () => {
  it.effect("thinks first, and counts the thinking in completion_tokens", () =>
    Effect.gen(function*() {
      const completion = yield* complete({ messages: user })
      const message = completion.choices[0]!.message
      expect(message.reasoning_content).toMatch(/^Let me think about this\./)
      expect(message.content).toContain("Why is the sky blue?")
      const reasoning = completion.usage!.completion_tokens_details!.reasoning_tokens!
      expect(reasoning).toBeGreaterThan(5)
      const plain = yield* complete({ messages: user }, "sandbox-mini")
      expect(plain.choices[0]!.message.reasoning_content).toBeUndefined()
      expect(plain.usage!.completion_tokens_details).toBeUndefined()
      expect(completion.usage!.completion_tokens).toBe(plain.usage!.completion_tokens + reasoning)
    }))

  it.effect("shares max_tokens with the answer, thinking first", () =>
    Effect.gen(function*() {
      const full = yield* complete({ messages: user })
      const reasoning = full.usage!.completion_tokens_details!.reasoning_tokens!
      const short = yield* complete({ messages: user, max_tokens: reasoning + 2 })
      expect(short.usage!.completion_tokens).toBe(reasoning + 2)
      expect(short.choices[0]!.finish_reason).toBe("length")
      const starved = yield* complete({ messages: user, max_tokens: 3 })
      expect(starved.choices[0]!.message).toMatchObject({ content: "", reasoning_content: "Let me think" })
      expect(starved.usage!.completion_tokens).toBe(3)
      expect(starved.choices[0]!.finish_reason).toBe("length")
    }))

  it.effect("streams its thinking before the answer, and the pieces join to the completion's", () =>
    Effect.gen(function*() {
      const completion = yield* complete({ messages: user })
      const chunks = yield* Effect.flatMap(adapter, (a) => a.stream(call({ messages: user, stream: true }))).pipe(
        Effect.flatMap(Stream.runCollect),
        Effect.map(Chunk.toArray),
        Effect.scoped
      )
      const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta))
      const thinking = deltas.map((delta) => delta.reasoning_content ?? "").join("")
      const text = deltas.map((delta) => delta.content ?? "").join("")
      expect(thinking).toBe(completion.choices[0]!.message.reasoning_content)
      expect(text).toBe(completion.choices[0]!.message.content)
      const lastThinking = deltas.map((delta) => delta.reasoning_content !== undefined).lastIndexOf(true)
      const firstText = deltas.findIndex((delta) => (delta.content ?? "") !== "")
      expect(lastThinking).toBeLessThan(firstText)
      expect(chunks.at(-1)!.usage).toEqual(completion.usage)
    }))
})
