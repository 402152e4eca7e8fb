/**
 * The chat lane's decoder of plain chat requests (src/http/lane/plainChatRequest.ts)
 * answers what the declared `ChatRequest` schema answers, to the order of the
 * keys (an idempotency key's request hash is the decoded request's JSON), and
 * leaves everything it does not answer to the schema.
 */
import fc from "fast-check"
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { ChatRequest } from "../services/Chat.ts"
import { plainChatRequest } from "../src/http/lane/plainChatRequest.ts"

const decode = Schema.decodeUnknownEither(ChatRequest)

/** Values of every JSON kind, plain for some fields and not for others. */
const anyValue = fc.constantFrom<unknown>(
  true, false, null, 0, 1, 2, 3, -1, 0.5, 1.5, 2.5, 2 ** 53, "x", "", [], ["a"], ["a", 1], {}, { include_usage: true },
  { include_usage: 1 }, { include_usage: false, more: 1 }, { type: "text" }
)
const role = fc.constantFrom("system", "developer", "user", "assistant", "tool", "bogus")
const content = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom<unknown>(null, 5, [{ type: "text", text: "x" }], []))
const message = fc.record(
  {
    role,
    content,
    name: fc.oneof(fc.string({ maxLength: 4 }), fc.constant(3)),
    extra: anyValue,
    tool_call_id: fc.constant("t1"),
    tool_calls: fc.constant([{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }]),
    refusal: fc.constantFrom(null, "no")
  },
  { requiredKeys: ["role"] }
)
const fields = {
  model: fc.oneof(fc.constantFrom<unknown>("svc/bench", "", 5), fc.string({ maxLength: 6 })),
  messages: fc.oneof(fc.array(message, { maxLength: 4 }), fc.constantFrom<unknown>("hi", null)),
  stream: anyValue,
  stream_options: anyValue,
  max_tokens: anyValue,
  max_completion_tokens: anyValue,
  temperature: anyValue,
  top_p: anyValue,
  n: anyValue,
  stop: anyValue,
  seed: anyValue,
  user: anyValue,
  route: fc.constantFrom<unknown>("auto", "fallback", 1),
  tools: fc.constant<unknown>([]),
  zeta: anyValue,
  frequency_penalty: anyValue,
  alpha: anyValue
}
const plainMessage = fc.record({
  role: fc.constantFrom("system", "developer", "user", "assistant"),
  content: fc.string({ maxLength: 8 }),
  name: fc.string({ maxLength: 4 })
}, { requiredKeys: ["role", "content"] })
/** A plain request, but for one field (of the request or of one message) set to any value. */
const plainRequest = fc.record({
  model: fc.constant("svc/bench"),
  messages: fc.array(plainMessage, { maxLength: 3 }),
  temperature: fc.constantFrom(0, 0.7, 2),
  max_tokens: fc.constantFrom(1, 64, null),
  stream: fc.boolean()
}, { requiredKeys: ["model", "messages"] })
const nearlyPlain = fc.tuple(
  plainRequest,
  fc.constantFrom(...Object.keys(fields)),
  fc.oneof(anyValue, message),
  fc.boolean()
).map(([plain, field, value, inMessage]) =>
  inMessage && plain.messages.length > 0 && typeof value !== "object"
    ? { ...plain, messages: [{ ...plain.messages[0]!, [field === "model" ? "content" : "name"]: value }, ...plain.messages.slice(1)] }
    : { ...plain, [field]: value }
)
/** Mostly plain requests (so the decoder answers often), with every field at times. */
const request = fc.oneof(
  { arbitrary: plainRequest, weight: 2 },
  { arbitrary: nearlyPlain, weight: 6 },
  { arbitrary: fc.record(fields, { requiredKeys: [] }), weight: 1 },
  { arbitrary: fc.record(fields, { requiredKeys: ["model", "messages"] }), weight: 1 }
)

/** As the lane gets it: parsed from JSON, its keys in a random order. */
const wire = (value: Record<string, unknown>, order: ReadonlyArray<number>) => {
  const entries = Object.entries(value)
  const shuffled = entries.map((entry, i) => [order[i] ?? 0, entry] as const).sort((a, b) => a[0] - b[0]).map(([, e]) => e)
  return JSON.parse(JSON.stringify(Object.fromEntries(shuffled))) as unknown
}

describe("plain chat requests", () => {
  it("are decoded as the schema decodes them, key order included, and the rest is left to the schema", () => {
    let answered = 0
    let total = 0
    fc.assert(
      fc.property(request, fc.array(fc.integer(), { minLength: 20, maxLength: 20 }), (value, order) => {
        const input = wire(value, order)
        const plain = plainChatRequest(input)
        const schema = decode(input)
        total++
        if (plain === undefined) return true
        answered++
        expect(Either.isRight(schema)).toBe(true)
        const decoded = Either.getOrThrow(schema)
        expect(plain).toEqual(decoded)
        expect(JSON.stringify(plain)).toBe(JSON.stringify(decoded))
        return true
      }),
      { numRuns: 3000 }
    )
    // The property says something only if the decoder answers a good share of what it is given.
    expect(answered / total).toBeGreaterThan(0.25)
  })

  it("answers what the bench, the OpenAI client and multi-turn chats send", () => {
    const bodies = [
      { model: "svc/bench", messages: [{ role: "system", content: "You are terse." }, { role: "user", content: "Say hello" }] },
      { model: "gpt-4o", messages: [{ role: "user", content: "hi" }], stream: true, stream_options: { include_usage: true } },
      {
        model: "svc/fast",
        messages: [
          { role: "developer", content: "Be brief.", name: "ops" },
          { role: "user", content: "2+2?" },
          { role: "assistant", content: "4" },
          { role: "user", content: "and 3+3?" }
        ],
        temperature: 0.2,
        top_p: 1,
        max_completion_tokens: 100,
        seed: 7,
        n: 1,
        stop: ["\n"],
        user: "u-1",
        frequency_penalty: 0.5,
        logit_bias: { "50256": -100 }
      }
    ]
    for (const body of bodies) {
      const input = JSON.parse(JSON.stringify(body)) as unknown
      const plain = plainChatRequest(input)
      expect(plain).toBeDefined()
      expect(JSON.stringify(plain)).toBe(JSON.stringify(Either.getOrThrow(decode(input))))
    }
  })

  it("leaves requests with tools, parts, unknown message fields or a prototype key to the schema", () => {
    const base = { model: "m", messages: [{ role: "user", content: "hi" }] }
    const notPlain = [
      { ...base, tools: [] },
      { ...base, messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] },
      { ...base, messages: [{ role: "user", content: "hi", extra: 1 }] },
      { ...base, messages: [{ role: "tool", content: "x", tool_call_id: "t" }] },
      { model: "m" },
      JSON.parse(`{"model":"m","messages":[],"__proto__":{"a":1}}`),
      { ...base, stream: undefined }
    ]
    for (const body of notPlain) expect(plainChatRequest(body)).toBeUndefined()
  })
})
