/**
 * Router strategies: how a router mode (`model: "auto" | "cheapest" | "fast"
 * | "best"`, or `route: "auto"` over a `models` list) orders the models that
 * can serve a request, and which of them it leaves out. A strategy is a
 * plugin: one file that registers itself with the options the config gives it
 * (`routing.modes.<id>`, decoded once at start), and the gateway tries the
 * models in the order it returns.
 */
import { Context, Effect, Either, Layer } from "effect"
import type { Model } from "./Catalogue.ts"
import { AppConfig, type Capability, ConfigInvalid } from "./Config.ts"
import type { Nanos } from "./Money.ts"
import { fieldIn } from "./fieldPath.ts"
import { decodeOptions, type Plugin, type Registry } from "./Registry.ts"

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
  /** Expected time to a full answer on its best measured deployment; undefined when never measured. */
  readonly expectedLatencyMs: number | undefined
  /** Measured p95 latency of that same deployment; undefined when never measured. */
  readonly p95LatencyMs: number | undefined
}

/** A model a mode left out, and why (in words that name no provider). */
export interface Dropped {
  readonly model: string
  readonly reason: string
}

export interface Ranking {
  /** The models to try, best first; never empty (a mode never leaves out its best). */
  readonly order: ReadonlyArray<Candidate>
  /** Why the first is first: short and stable, for the `provider.route` event (no provider names). */
  readonly reason: string
  /** The candidates left out, each with its reason. */
  readonly dropped: ReadonlyArray<Dropped>
}

/** A router mode as its plugin file declares it; `id` is the mode's name, as the request's `model`. */
export interface RouterStrategy<Options = any> extends Plugin<Options> {
  /** Orders the candidates (never empty) best first, with the mode's options; may leave some out, never the first. */
  readonly rank: (candidates: ReadonlyArray<Candidate>, shape: RequestShape, options: Options) => Ranking
}

/** A router mode in force: its strategy with the options the gateway started with. */
export interface RouterMode extends Plugin<any> {
  readonly rank: (candidates: ReadonlyArray<Candidate>, shape: RequestShape) => Ranking
}

/** Where strategy plugins register themselves at start, options bound. */
export class RouterStrategies extends Context.Tag("svc/RouterStrategies")<RouterStrategies, Registry<RouterMode>>() {}

/** The mode a strategy is with these options. */
export const withOptions = <Options>(strategy: RouterStrategy<Options>, options: Options): RouterMode => ({
  id: strategy.id,
  options: strategy.options,
  rank: (candidates, shape) => strategy.rank(candidates, shape, options)
})

/**
 * The Layer a strategy file exports: decodes the mode's options from `routing.modes.<id>` (absent → the
 * schema's defaults) and registers the strategy with them; options its schema refuses stop the start.
 */
export const registerStrategy = <Options>(
  strategy: RouterStrategy<Options>
): Layer.Layer<never, ConfigInvalid, RouterStrategies | AppConfig> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const config = yield* AppConfig
    const at = `routing.modes.${strategy.id}`
    const options = yield* Either.mapLeft(
      decodeOptions(strategy, config.file.routing.modes[strategy.id] ?? {}),
      (refused) => new ConfigInvalid({ field: fieldIn(at, refused.field), reason: refused.reason })
    )
    const modes = yield* RouterStrategies
    yield* modes.register(withOptions(strategy, options))
  }))
