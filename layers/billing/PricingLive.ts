/**
 * Pricing with exact bigint money and the o200k_base tokenizer (GPT-4o family),
 * whose ranks ship inside the npm package: nothing is fetched at run time.
 * Text is counted in linear time within a per-request budget (tokenCount.ts);
 * images, audio and files by their size (imageTokens.ts, mediaTokens.ts), so
 * the estimate is an upper bound of what the input can cost.
 */
import { Layer } from "effect"
import type { Model, TokenPrice } from "../../services/Catalogue.ts"
import { type ChatRequest, type ContentPart, type Message, requestedMaxTokens } from "../../services/Chat.ts"
import type { Nanos } from "../../services/Money.ts"
import { DEFAULT_OUTPUT_ALLOWANCE, type Estimate, Pricing, type TokenUsage } from "../../services/Pricing.ts"
import { imageTokens } from "./imageTokens.ts"
import { audioTokens, fileTokens } from "./mediaTokens.ts"
import { counter, countText } from "./tokenCount.ts"

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
/** Counts one text (each request gets its own, sharing one exact-counting budget). */
type Count = (text: string) => number

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

const countPart = (count: Count, part: ContentPart): number => {
  switch (part.type) {
    case "text":
      return count(part.text)
    case "image_url":
      return imageTokens(part.image_url)
    case "input_audio":
      return audioTokens(part)
    case "file":
      return fileTokens(part)
  }
}

const countContent = (count: Count, content: string | ReadonlyArray<ContentPart> | null | undefined): number => {
  if (content == null) return 0
  if (typeof content === "string") return count(content)
  let tokens = 0
  for (const part of content) tokens += countPart(count, part)
  return tokens
}

const countMessage = (count: Count, message: Message): number => {
  let tokens = TOKENS_PER_MESSAGE + countContent(count, message.content)
  if ("name" in message && message.name !== undefined) tokens += TOKENS_PER_NAME + count(message.name)
  if (message.role === "assistant") {
    if (message.refusal) tokens += count(message.refusal)
    for (const call of message.tool_calls ?? []) {
      tokens += count(call.function.name) + count(call.function.arguments)
    }
  }
  return tokens
}

const countInput = (request: ChatRequest): number => {
  const count = counter()
  let tokens = REPLY_PRIMING
  for (const message of request.messages) tokens += countMessage(count, message)
  // Upstreams render tools and schemas into the prompt; their JSON is a close stand-in.
  if (request.tools !== undefined && request.tools.length > 0) tokens += count(JSON.stringify(request.tools))
  if (request.response_format !== undefined) tokens += count(JSON.stringify(request.response_format))
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
  counter: () => counter(),
  estimate: (model, request) => estimateFor(model, countInput(request), requestedMaxTokens(request)),
  estimateFor
})
