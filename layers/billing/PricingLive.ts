/**
 * Pricing with exact bigint money and the o200k_base tokenizer (GPT-4o family),
 * whose ranks ship inside the npm package: nothing is fetched at run time.
 */
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import { Layer } from "effect"
import type { Model, TokenPrice } from "../../services/Catalogue.ts"
import { type ChatRequest, type ContentPart, type Message, requestedMaxTokens } from "../../services/Chat.ts"
import type { Nanos } from "../../services/Money.ts"
import { DEFAULT_OUTPUT_ALLOWANCE, type Estimate, Pricing, type TokenUsage } from "../../services/Pricing.ts"

const PER_MILLION = 1_000_000n
const HALF = PER_MILLION / 2n

/**
 * OpenAI's chat framing `<|start|>{role}<|message|>…<|end|>`: three framing
 * tokens plus the role, which is one token for every role we accept.
 */
const TOKENS_PER_MESSAGE = 4
/** A `name` on a message costs its text plus one separator. */
const TOKENS_PER_NAME = 1
/** `<|start|>assistant<|message|>` that primes the reply. */
const REPLY_PRIMING = 3
/** OpenAI's low-detail image figure; the real count is only known after the upstream sees the image. */
const TOKENS_PER_IMAGE = 85

/** User text may contain `<|endoftext|>` and the like: count it as plain text instead of throwing. */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() }

const countText = (text: string): number => (text.length === 0 ? 0 : countTokens(text, PLAIN_TEXT))

/** Rounds toward +∞ on exact halves even for a negative sum (bigint `/` truncates toward zero). */
const roundHalfUpPerMillion = (scaled: bigint): Nanos => {
  const shifted = scaled + HALF
  const quotient = shifted / PER_MILLION
  return shifted % PER_MILLION < 0n ? quotient - 1n : quotient
}

const amount = (price: TokenPrice, usage: TokenUsage): Nanos =>
  roundHalfUpPerMillion(
    BigInt(usage.inputTokens) * price.input + BigInt(usage.outputTokens) * (price.output ?? 0n)
  )

const countPart = (part: ContentPart): number => {
  switch (part.type) {
    case "text":
      return countText(part.text)
    case "image_url":
      return TOKENS_PER_IMAGE
    default:
      // Audio and files: size unknown until the upstream decodes them; the receipt uses its reported usage.
      return 0
  }
}

const countContent = (content: string | ReadonlyArray<ContentPart> | null | undefined): number => {
  if (content == null) return 0
  if (typeof content === "string") return countText(content)
  let tokens = 0
  for (const part of content) tokens += countPart(part)
  return tokens
}

const countMessage = (message: Message): number => {
  let tokens = TOKENS_PER_MESSAGE + countContent(message.content)
  if ("name" in message && message.name !== undefined) tokens += TOKENS_PER_NAME + countText(message.name)
  if (message.role === "assistant") {
    if (message.refusal) tokens += countText(message.refusal)
    for (const call of message.tool_calls ?? []) {
      tokens += countText(call.function.name) + countText(call.function.arguments)
    }
  }
  return tokens
}

const countInput = (request: ChatRequest): number => {
  let tokens = REPLY_PRIMING
  for (const message of request.messages) tokens += countMessage(message)
  // Upstreams render tools and schemas into the prompt; their JSON is a close stand-in.
  if (request.tools !== undefined && request.tools.length > 0) tokens += countText(JSON.stringify(request.tools))
  if (request.response_format !== undefined) tokens += countText(JSON.stringify(request.response_format))
  return tokens
}

const estimateFor = (model: Model, inputTokens: number, requestedOutput: number | undefined): Estimate => {
  const room = Math.max(0, model.context - inputTokens)
  const outputTokens = Math.min(requestedOutput ?? DEFAULT_OUTPUT_ALLOWANCE, room)
  return { inputTokens, outputTokens, total: amount(model.pricing, { inputTokens, outputTokens }) }
}

export const PricingLive = Layer.succeed(Pricing, {
  amount,
  cost: (model, deployment, usage) => {
    const total = amount(model.pricing, usage)
    const upstream = amount(deployment.cost, usage)
    return { total, upstream, margin: total - upstream }
  },
  countInput,
  countText,
  estimate: (model, request) => estimateFor(model, countInput(request), requestedMaxTokens(request)),
  estimateFor
})
