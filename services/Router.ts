/**
 * Router strategies: how a router mode (`model: "auto" | "cheapest" | "fast"
 * | "best"`, or `route: "auto"` over a `models` list) orders the models that
 * can serve a request. A strategy is a plugin: one file that registers itself,
 * and the gateway tries the models in the order it returns.
 */
import { Context } from "effect"
import type { Model } from "./Catalogue.ts"
import type { Capability } from "./Config.ts"
import type { Nanos } from "./Money.ts"
import { type Plugin, registerIn, type Registry } from "./Registry.ts"

/** What the router knows of a request: enough to judge eligibility and to score models. */
export interface RequestShape {
  /** Input tokens, counted with the tokenizer. */
  readonly inputTokens: number
  /** `max_completion_tokens` / `max_tokens`, when the caller set one. */
  readonly requestedOutput: number | undefined
  /** Capabilities a model must have to serve it. */
  readonly needs: ReadonlyArray<Capability>
  readonly streaming: boolean
  readonly tools: boolean
  readonly images: boolean
  readonly structuredOutput: boolean
  /** The caller asks for reasoning (`reasoning_effort` or `reasoning`). */
  readonly reasoning: boolean
}

/** A model that can serve the request, with what the gateway knows of it now. */
export interface Candidate {
  readonly model: Model
  /** This request's expected price at the model's catalogue price (input + expected output). */
  readonly expectedCost: Nanos
  /** Expected seconds to a full answer on its best healthy deployment; undefined when never measured. */
  readonly expectedLatencyMs: number | undefined
}

export interface Ranking {
  /** Best first. */
  readonly order: ReadonlyArray<Candidate>
  /** Why the first is first, for the `provider.route` event (no provider names). */
  readonly reason: string
}

/** `id` is the router mode's name, as the request's `model`. */
export interface RouterStrategy<Options = any> extends Plugin<Options> {
  /** Orders the candidates (never empty), best first. */
  readonly rank: (candidates: ReadonlyArray<Candidate>, shape: RequestShape) => Ranking
}

/** Where strategy plugins register themselves at start. */
export class RouterStrategies extends Context.Tag("svc/RouterStrategies")<RouterStrategies, Registry<RouterStrategy>>() {}

/** The Layer a strategy file exports: registering `strategy` is all it does. */
export const registerStrategy = registerIn(RouterStrategies)
