/**
 * Pricing with exact bigint money and the o200k_base tokenizer (GPT-4o family),
 * whose ranks ship inside the npm package: nothing is fetched at run time.
 * Text is counted in linear time within a per-request budget (tokenCount.ts);
 * images, audio and files by their size (imageTokens.ts, mediaTokens.ts), so
 * the estimate is an upper bound of what the input can cost.
 */
import { Effect, Layer } from "effect"
import type { Model, TokenPrice } from "../../services/Catalogue.ts"
import { type ChatRequest, type ContentPart, type Message, requestedMaxTokens } from "../../services/Chat.ts"
import type { Nanos } from "../../services/Money.ts"
import { DEFAULT_OUTPUT_ALLOWANCE, type Estimate, Pricing, type TokenUsage } from "../../services/Pricing.ts"
import { imageTokens } from "./imageTokens.ts"
import { audioTokens, fileTokens } from "./mediaTokens.ts"
import { counter, countText, fairCounter, SEGMENT_CHARS } from "./tokenCount.ts"

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

/** What a request's input is made of: fixed tokens (framing, media by size) and the texts to count, in order. */
interface InputParts {
  fixed: number
  readonly texts: Array<string>
}

const addPart = (parts: InputParts, part: ContentPart): void => {
  switch (part.type) {
    case "text":
      parts.texts.push(part.text)
      return
    case "image_url":
      parts.fixed += imageTokens(part.image_url)
      return
    case "input_audio":
      parts.fixed += audioTokens(part)
      return
    case "file":
      parts.fixed += fileTokens(part)
  }
}

const addMessage = (parts: InputParts, message: Message): void => {
  parts.fixed += TOKENS_PER_MESSAGE
  const content = message.content
  if (typeof content === "string") parts.texts.push(content)
  else if (content != null) for (const part of content) addPart(parts, part)
  if ("name" in message && message.name !== undefined) {
    parts.fixed += TOKENS_PER_NAME
    parts.texts.push(message.name)
  }
  if (message.role === "assistant") {
    if (message.refusal) parts.texts.push(message.refusal)
    for (const call of message.tool_calls ?? []) parts.texts.push(call.function.name, call.function.arguments)
  }
}

const inputParts = (request: ChatRequest): InputParts => {
  const parts: InputParts = { fixed: REPLY_PRIMING, texts: [] }
  for (const message of request.messages) addMessage(parts, message)
  // Upstreams render tools and schemas into the prompt; their JSON is a close stand-in.
  if (request.tools !== undefined && request.tools.length > 0) parts.texts.push(JSON.stringify(request.tools))
  if (request.response_format !== undefined) parts.texts.push(JSON.stringify(request.response_format))
  return parts
}

/** The input's tokens, counted at once with one request's budget. */
const countParts = ({ fixed, texts }: InputParts): number => {
  const count = counter()
  return texts.reduce((tokens, text) => tokens + count(text), fixed)
}

const countInput = (request: ChatRequest): number => countParts(inputParts(request))

/** The same count, giving other fibers turns while a large input is counted. */
const countTexts = (texts: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<number>> =>
  Effect.forEach(texts, fairCounter())

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
  // Counted when called (an answer at once, services/atOnce.ts): every chat call is counted here.
  countInputFairly: (request) => {
    const parts = inputParts(request)
    // Texts of one segment each get no turn of the event loop between them either way: counted at once,
    // without an Effect per text.
    if (parts.texts.every((text) => text.length <= SEGMENT_CHARS)) return Effect.succeed(countParts(parts))
    return Effect.map(countTexts(parts.texts), (counts) => counts.reduce((sum, n) => sum + n, parts.fixed))
  },
  countText,
  countTexts,
  estimate: (model, request) => estimateFor(model, countInput(request), requestedMaxTokens(request)),
  estimateFor
})
