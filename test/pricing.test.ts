/** Exact call amounts (bigint, half-up once over the sum) and real token counts. */
import { Effect } from "effect"
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import { describe, expect, it } from "vitest"
import { PricingLive } from "../layers/billing/PricingLive.ts"
import type { Deployment, Model, TokenPrice } from "../services/Catalogue.ts"
import type { ChatRequest } from "../services/Chat.ts"
import type { ProviderAdapter } from "../services/Providers.ts"
import { DEFAULT_OUTPUT_ALLOWANCE, Pricing } from "../services/Pricing.ts"

const pricing = Effect.runSync(Pricing.pipe(Effect.provide(PricingLive)))

/** Catalogue prices are nano-dollars per 1M tokens: $0.80/M = 800_000_000n. */
const perMillion = (input: bigint, output?: bigint): TokenPrice => ({ input, output })

const model = (id: string, context: number, price: TokenPrice): Model => ({
  id,
  name: id,
  context,
  pricing: price,
  modalities: ["text", "image"],
  capabilities: ["chat"],
  supportedParameters: [],
  quality: 0.5,
  tier: "pro",
  privacyClasses: []
})

const deployment = (cost: TokenPrice): Deployment => ({
  id: "p/0",
  weight: 1,
  policy: { stores: true, logs: true, trains: true, operatorControlled: false },
  model: "svc/pro",
  provider: { id: "p", plugin: "dummy", timeoutMs: 1000, deployments: [] },
  upstreamModel: "up",
  cost,
  privacyClasses: [],
  adapter: {} as ProviderAdapter
})

const swift = model("svc/swift", 128_000, perMillion(35_000_000n, 140_000_000n))
const pro = model("svc/pro", 300_000, perMillion(800_000_000n, 3_200_000_000n))
const premier = model("svc/premier", 1_000_000, perMillion(2_500_000_000n, 12_500_000_000n))

const ask = (text: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: "svc/pro",
  messages: [{ role: "user", content: text }],
  ...extra
})

describe("amount: half up to the nano-dollar, once over the sum", () => {
  // A price of 35_000 nanos/M is 0.035 nanos per token.
  const tiny = perMillion(35_000n, 0n)

  it.each([
    [1, 0n], // 0.035 → 0
    [14, 0n], // 0.49 → 0
    [15, 1n], // 0.525 → 1
    [42, 1n], // 1.47 → 1
    [43, 2n] // 1.505 → 2
  ])("%i tokens at 0.035 nanos each", (tokens, nanos) => {
    expect(pricing.amount(tiny, { inputTokens: tokens, outputTokens: 0 })).toBe(nanos)
  })

  it("rounds an exact half up and a hair below it down", () => {
    expect(pricing.amount(perMillion(500_000n), { inputTokens: 1, outputTokens: 0 })).toBe(1n) // 0.5
    expect(pricing.amount(perMillion(499_999n), { inputTokens: 1, outputTokens: 0 })).toBe(0n) // 0.499999
    expect(pricing.amount(perMillion(1_500_000n), { inputTokens: 1, outputTokens: 0 })).toBe(2n) // 1.5
  })

  it("rounds the sum, not each side", () => {
    // 0.3 + 0.3 = 0.6 → 1, where rounding each side would give 0 + 0.
    expect(pricing.amount(perMillion(300_000n, 300_000n), { inputTokens: 1, outputTokens: 1 })).toBe(1n)
  })

  it("charges nothing for output when the price has none (embeddings)", () => {
    expect(pricing.amount(perMillion(20_000_000n), { inputTokens: 1000, outputTokens: 999 })).toBe(20_000n)
  })

  it("prices a token of svc/swift at exactly 35 nanos", () => {
    // $0.035/M = 35_000_000 nanos/M = 35 nanos per token: catalogue prices never need rounding per token.
    expect(pricing.amount(swift.pricing, { inputTokens: 1, outputTokens: 0 })).toBe(35n)
    expect(pricing.amount(swift.pricing, { inputTokens: 0, outputTokens: 1 })).toBe(140n)
  })

  it("prices a realistic svc/pro call exactly", () => {
    // 1,234 × 800,000,000 = 987,200,000,000
    // 567 × 3,200,000,000 = 1,814,400,000,000
    // sum 2,801,600,000,000 / 1,000,000 = 2,801,600 nanos = $0.0028016
    expect(pricing.amount(pro.pricing, { inputTokens: 1234, outputTokens: 567 })).toBe(2_801_600n)
  })

  it("stays exact past Number's 2^53 (full 1M context at premier prices)", () => {
    // 1M × $2.50/M + 1M × $12.50/M = $15
    expect(pricing.amount(premier.pricing, { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toBe(15_000_000_000n)
    // 999,999 × 12,500,000,001 = 12,499,987,500,999,999 (> 2^53) → 12,499,987,500.999999 → 12,499,987,501
    const odd = perMillion(0n, 12_500_000_001n)
    expect(pricing.amount(odd, { inputTokens: 0, outputTokens: 999_999 })).toBe(12_499_987_501n)
  })
})

describe("cost", () => {
  it("splits a call into upstream and margin that add up to the total", () => {
    // Customer: 2,801,600 (above). Upstream at $0.50/$2.00: 617,000,000,000 + 1,134,000,000,000 → 1,751,000.
    const cost = pricing.cost(pro, deployment(perMillion(500_000_000n, 2_000_000_000n)), {
      inputTokens: 1234,
      outputTokens: 567
    })
    expect(cost).toEqual({ total: 2_801_600n, upstream: 1_751_000n, margin: 1_050_600n })
  })

  it("keeps total = upstream + margin for many random prices and usages", () => {
    // A fixed-seed LCG keeps failures reproducible.
    let seed = 0x2545f4914f6cdd1dn
    const next = (bound: bigint): bigint => {
      seed = (seed * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn
      return (seed >> 11n) % bound
    }
    const reference = (price: TokenPrice, input: number, output: number): bigint => {
      const scaled = BigInt(input) * price.input + BigInt(output) * (price.output ?? 0n)
      const whole = scaled / 1_000_000n
      return (scaled % 1_000_000n) * 2n >= 1_000_000n ? whole + 1n : whole
    }
    for (let i = 0; i < 2000; i++) {
      const customer = perMillion(next(100_000_000_000n), i % 7 === 0 ? undefined : next(100_000_000_000n))
      const upstream = perMillion(next(100_000_000_000n), i % 5 === 0 ? undefined : next(100_000_000_000n))
      const usage = { inputTokens: Number(next(2_000_000n)), outputTokens: Number(next(200_000n)) }
      const cost = pricing.cost(model("m", 2_000_000, customer), deployment(upstream), usage)
      expect(cost.upstream + cost.margin).toBe(cost.total)
      expect(cost.total).toBe(reference(customer, usage.inputTokens, usage.outputTokens))
      expect(cost.upstream).toBe(reference(upstream, usage.inputTokens, usage.outputTokens))
    }
  })
})

describe("estimate", () => {
  const input = pricing.countInput(ask("hello"))

  it("reserves max_tokens", () => {
    const estimate = pricing.estimate(pro, ask("hello", { max_tokens: 100 }))
    expect(estimate).toEqual({
      inputTokens: input,
      outputTokens: 100,
      total: pricing.amount(pro.pricing, { inputTokens: input, outputTokens: 100 })
    })
  })

  it("prefers max_completion_tokens over max_tokens", () => {
    expect(pricing.estimate(pro, ask("hello", { max_tokens: 100, max_completion_tokens: 250 })).outputTokens).toBe(250)
    expect(pricing.estimate(pro, ask("hello", { max_tokens: null, max_completion_tokens: 7 })).outputTokens).toBe(7)
  })

  it("reserves the default allowance when no limit is given", () => {
    expect(pricing.estimate(pro, ask("hello")).outputTokens).toBe(DEFAULT_OUTPUT_ALLOWANCE)
    expect(pricing.estimate(pro, ask("hello", { max_tokens: null })).outputTokens).toBe(DEFAULT_OUTPUT_ALLOWANCE)
  })

  it("never reserves more output than the context leaves", () => {
    const small = model("small", input + 10, pro.pricing)
    expect(pricing.estimate(small, ask("hello")).outputTokens).toBe(10)
    expect(pricing.estimate(small, ask("hello", { max_tokens: 5 })).outputTokens).toBe(5)
    const tooSmall = model("tiny", input - 1, pro.pricing)
    const over = pricing.estimate(tooSmall, ask("hello", { max_tokens: 100 }))
    expect(over.outputTokens).toBe(0)
    expect(over.total).toBe(pricing.amount(pro.pricing, { inputTokens: input, outputTokens: 0 }))
  })
})

describe("token counting", () => {
  it("counts like the o200k_base tokenizer, not chars/4", () => {
    expect(pricing.countText("hello world")).toBe(2)
    expect(pricing.countText("antidisestablishmentarianism")).toBe(6) // chars/4 would say 7
    expect(pricing.countText("zqxj")).toBe(3) // chars/4 would say 1
    expect(pricing.countText("")).toBe(0)
    const sentence = "The quick brown fox jumps over the lazy dog."
    expect(pricing.countText(sentence)).toBe(countTokens(sentence))
    expect(pricing.countText(sentence)).toBe(10)
  })

  it("counts special-token text as plain text instead of throwing", () => {
    expect(pricing.countText("a <|endoftext|> b")).toBeGreaterThan(3)
  })

  it("adds message framing and reply priming to the text", () => {
    // 3 reply priming + 4 per message + 2 for "hello world"
    expect(pricing.countInput(ask("hello world"))).toBe(9)
  })

  it("grows with messages, names, tool calls, tools, images and response formats", () => {
    const base = ask("What is the weather in Paris?")
    const count = pricing.countInput
    const withTurn: ChatRequest = {
      ...base,
      messages: [{ role: "system", content: "Be brief.", name: "ops" }, ...base.messages]
    }
    expect(count(withTurn)).toBe(count(base) + 4 + pricing.countText("Be brief.") + 1 + pricing.countText("ops"))

    const withToolCall: ChatRequest = {
      ...base,
      messages: [
        ...base.messages,
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "weather", arguments: "{\"city\":\"Paris\"}" } }]
        },
        { role: "tool", tool_call_id: "c1", content: "{\"celsius\":21}" }
      ]
    }
    expect(count(withToolCall)).toBe(
      count(base) + 4 + pricing.countText("weather") + pricing.countText("{\"city\":\"Paris\"}") +
        4 + pricing.countText("{\"celsius\":21}")
    )

    const tools: ChatRequest["tools"] = [{
      type: "function",
      function: {
        name: "weather",
        description: "Current weather for a city",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
      }
    }]
    expect(count({ ...base, tools })).toBe(count(base) + pricing.countText(JSON.stringify(tools)))

    const withImage: ChatRequest = {
      ...base,
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "What is the weather in Paris?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }
        ]
      }]
    }
    // An image whose size cannot be read is reserved at the most OpenAI's high-detail rule gives.
    expect(count(withImage)).toBe(count(base) + 1445)
    const question = { type: "text" as const, text: "What is the weather in Paris?" }
    const lowDetail = { type: "image_url" as const, image_url: { url: "https://example.com/cat.png", detail: "low" } }
    expect(count({ ...base, messages: [{ role: "user", content: [question, lowDetail] }] })).toBe(count(base) + 85)

    const responseFormat: ChatRequest["response_format"] = { type: "json_object" }
    expect(count({ ...base, response_format: responseFormat })).toBe(
      count(base) + pricing.countText(JSON.stringify(responseFormat))
    )
  })
})
