/**
 * Route planning: which models may serve an admitted call (request shape,
 * eligibility, router mode or the caller's list), the class it is promised
 * (through the privacy policy), and the ordered deployments to try (margin
 * floor, open circuits left out, cheapest upstream first), with the amount to
 * hold. A plan is a value: nothing is reserved or sent here.
 */
import { Context, type Effect, type Fiber } from "effect"
import type {
  ContextLengthExceeded,
  InvalidRequest,
  MarginFloorViolated,
  PrivacyClassUnavailable,
  RuntimeUnavailable,
  UpstreamError
} from "./ApiError.ts"
import type { AdmittedChat } from "./Admission.ts"
import type { Deployment, Model } from "./Catalogue.ts"
import type { Nanos } from "./Money.ts"
import type { PrivacyDecision } from "./PrivacyPolicy.ts"
import type { Dropped } from "./Router.ts"

/** One route: a model and one of its deployments. */
export interface Target {
  readonly model: Model
  readonly deployment: Deployment
  /** Output tokens the hold reserved for this model: sent upstream as the output limit. */
  readonly outputTokens: number
}

export interface Route {
  /** Why the first model was chosen (for `provider.route`; names no provider). */
  readonly reason: string
  /** Models the router mode left out, and why (with the first `provider.route`). */
  readonly dropped: ReadonlyArray<Dropped>
  readonly privacy: PrivacyDecision
  /** In the order to try them. */
  readonly targets: ReadonlyArray<Target>
  /** What to hold: the largest estimate among the models that may serve, so any fallback is covered. */
  readonly amount: Nanos
}

export type PlanError =
  | InvalidRequest
  | ContextLengthExceeded
  | PrivacyClassUnavailable
  | RuntimeUnavailable
  | MarginFloorViolated
  | UpstreamError

export class RoutePlanner extends Context.Tag("svc/RoutePlanner")<RoutePlanner, {
  /** Given `fiber`, the one the caller runs a step of now, planned when called (services/atOnce.ts). */
  readonly plan: (call: AdmittedChat, fiber?: Fiber.RuntimeFiber<unknown, unknown>) => Effect.Effect<Route, PlanError>
}>() {}
