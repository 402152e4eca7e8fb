/**
 * Which models to try for a request, in order.
 *
 * - `model` is a router mode (`auto`, `cheapest`, `fast`, `best`): the mode
 *   ranks the eligible models of the `models` list, or of the whole catalogue
 *   when there is none.
 * - `model` is a model id: that model first, then the `models` list, in order
 *   (OpenRouter's semantics; `route: "fallback"` is the default). With
 *   `route: "auto"` the `auto` mode ranks them instead.
 *
 * A mode may also leave models out (`fast` its slow outliers); the plan keeps
 * why, per model, beside the short reason for the first (both go into the
 * call's first `provider.route` event).
 *
 * Models that cannot serve the request (a capability it needs, or a context
 * too small) are left out; when none is left the request is refused with 400:
 * `context_length_exceeded` when context was the only obstacle, else
 * `invalid_request` naming what is missing.
 */
import { Effect, Option } from "effect"
import { ContextLengthExceeded, InvalidRequest } from "../../services/ApiError.ts"
import type { Catalogue, Model } from "../../services/Catalogue.ts"
import type { ChatRequest } from "../../services/Chat.ts"
import type { Candidate, Dropped, RequestShape, RouterStrategies } from "../../services/Router.ts"
import { type Ineligible, ineligibility, paramOf } from "./requestShape.ts"
import { quote } from "../../services/quote.ts"

export interface RoutePlan {
  readonly models: ReadonlyArray<Model>
  /** Why the first model was chosen (for `provider.route`). */
  readonly reason: string
  /** Eligible models the router mode left out, and why. */
  readonly dropped: ReadonlyArray<Dropped>
}

const unknownModel = (id: string, param: string) =>
  new InvalidRequest({ message: `Unknown model "${quote(id)}"; GET /v1/models lists the models you can use.`, param })

const refusal = (
  shape: RequestShape,
  rejected: ReadonlyArray<readonly [Model, Ineligible]>
): InvalidRequest | ContextLengthExceeded => {
  const missing = rejected.flatMap(([, why]) => (why._tag === "missing" ? why.capabilities : []))
  if (missing.length === 0) {
    const needed = shape.inputTokens + (shape.requestedOutput ?? 0)
    const largest = Math.max(...rejected.map(([model]) => model.context))
    return new ContextLengthExceeded({
      message: `This request needs ${needed} tokens of context (input plus requested output); ` +
        `the largest eligible context is ${largest}.`,
      param: "messages"
    })
  }
  if (rejected.length === 1) {
    const [model, why] = rejected[0]!
    const capabilities = why._tag === "missing" ? why.capabilities : []
    return new InvalidRequest({
      message: `${model.id} does not support ${capabilities.join(", ")}; GET /v1/models lists each model's capabilities.`,
      param: paramOf(capabilities[0]!)
    })
  }
  const needs = [...new Set(missing)]
  return new InvalidRequest({
    message: `No model asked for can serve this request: it needs ${needs.join(", ")}.`,
    param: paramOf(needs[0]!)
  })
}

/** The plan, an answer at once (services/atOnce.ts): made when called, with no Effect step (every chat call plans). */
export const planRoute = (
  request: ChatRequest,
  shape: RequestShape,
  catalogue: Catalogue["Type"],
  strategies: RouterStrategies["Type"],
  candidateOf: (model: Model) => Candidate
): Effect.Effect<RoutePlan, InvalidRequest | ContextLengthExceeded> => {
  const mode = strategies.get(request.model)
  const listed = request.models ?? []
  let asked: Array<Model>
  if (Option.isSome(mode) && listed.length === 0) {
    asked = catalogue.list.filter((model) => model.capabilities.includes("chat"))
  } else {
    asked = []
    for (const id of new Set(Option.isSome(mode) ? listed : [request.model, ...listed])) {
      const model = catalogue.get(id)
      if (Option.isNone(model)) return Effect.fail(unknownModel(id, Option.isNone(mode) && asked.length === 0 ? "model" : "models"))
      asked.push(model.value)
    }
  }

  const eligible: Array<Model> = []
  const rejected: Array<readonly [Model, Ineligible]> = []
  for (const model of asked) {
    const why = ineligibility(model, shape)
    if (why === undefined) eligible.push(model)
    else rejected.push([model, why])
  }
  if (eligible.length === 0) return Effect.fail(refusal(shape, rejected))

  const strategy = Option.isSome(mode) ? mode : request.route === "auto" ? strategies.get("auto") : Option.none()
  if (Option.isNone(strategy)) {
    const reason = eligible[0]!.id === request.model ? "requested model" : "first listed model"
    return Effect.succeed({ models: eligible, reason, dropped: [] })
  }
  const ranking = strategy.value.rank(eligible.map(candidateOf), shape)
  if (ranking.order.length === 0) return Effect.dieMessage(`router mode ${strategy.value.id} left no model`)
  return Effect.succeed({
    models: ranking.order.map((candidate) => candidate.model),
    reason: `${strategy.value.id}: ${ranking.reason}`,
    dropped: ranking.dropped
  })
}
