/**
 * What a call costs. Prices are nano-dollars per one million tokens; a call's
 * amount is `round_half_up((input × inputPrice + output × outputPrice) / 1e6)`
 * nano-dollars, computed once over the whole sum. The customer's `total` uses
 * the model's catalogue price, `upstream` the deployment's cost, and
 * `margin = total − upstream`, so the three always add up to the last digit.
 */
import { Context, type Effect } from "effect"
import type { Deployment, Model, TokenPrice } from "./Catalogue.ts"
import type { ChatRequest } from "./Chat.ts"
import type { Nanos } from "./Money.ts"

export interface TokenUsage {
  readonly inputTokens: number
  readonly outputTokens: number
}

export interface Cost {
  readonly upstream: Nanos
  readonly margin: Nanos
  readonly total: Nanos
}

/** The cost of several steps of one call together. */
export const sumOfCosts = (costs: ReadonlyArray<Cost>): Cost =>
  costs.reduce((sum, cost) => ({
    upstream: sum.upstream + cost.upstream,
    margin: sum.margin + cost.margin,
    total: sum.total + cost.total
  }), { upstream: 0n, margin: 0n, total: 0n })

export interface Estimate extends TokenUsage {
  /** What the customer would pay for that usage: the amount reserved before the call. */
  readonly total: Nanos
}

/** Output tokens reserved when the caller sets no `max_tokens`. */
export const DEFAULT_OUTPUT_ALLOWANCE = 4096

export class Pricing extends Context.Tag("svc/Pricing")<Pricing, {
  /** Amount for a usage at a price (the rounding rule above). */
  readonly amount: (price: TokenPrice, usage: TokenUsage) => Nanos
  /** Customer price, upstream cost and margin of a usage served by a deployment. */
  readonly cost: (model: Model, deployment: Deployment, usage: TokenUsage) => Cost
  /**
   * An upper bound of a request's input tokens (messages and every content
   * part, tools, response format): text counted with a real tokenizer in
   * linear time, media by their size (README, "What a call reserves").
   */
  readonly countInput: (request: ChatRequest) => number
  /** Tokens of one text, e.g. generated text (content, tool-call names and arguments). */
  readonly countText: (text: string) => number
  /**
   * `countInput` as admission runs it: the same count, giving other fibers turns while a large
   * input is counted, so one big prompt cannot hold up everyone else's requests. Texts as short as
   * most are counted when it is called, the count its answer at once (services/atOnce.ts).
   */
  readonly countInputFairly: (request: ChatRequest) => Effect.Effect<number>
  /** One request's many texts (embeddings inputs), sharing one budget of exact counting, fairly as above. */
  readonly countTexts: (texts: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<number>>
  /**
   * The reservation for a call: counted input plus the requested output
   * (`max_completion_tokens` / `max_tokens`, else the default allowance, never
   * more than the context leaves) at the model's price.
   */
  readonly estimate: (model: Model, request: ChatRequest) => Estimate
  /** The same, from an input already counted (routing counts once and prices several models). */
  readonly estimateFor: (model: Model, inputTokens: number, requestedOutput: number | undefined) => Estimate
}>() {}
