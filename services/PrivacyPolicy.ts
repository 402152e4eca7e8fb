/**
 * The privacy policy of a call (spec 2.3, 2.4): the class asked for, the class
 * promised (earned by some planned model, a downgrade the caller allowed, or a
 * refusal), and for the confidential class the attestation verdicts it serves
 * under (fail closed: no fresh verdict, no route). The promise then bounds
 * every route of the call: fallbacks never serve weaker.
 */
import { Context, type Effect } from "effect"
import type { InvalidRequest, PrivacyClassUnavailable, RuntimeUnavailable } from "./ApiError.ts"
import type { Deployment, Model } from "./Catalogue.ts"
import type { ChatRequest } from "./Chat.ts"
import type { PrivacyClass } from "./Config.ts"
import type { CallEvent } from "./Ledger.ts"
import type { PrivacyBlock } from "./Privacy.ts"

/** What a request's envelope asks for. */
export interface PrivacyAsk {
  readonly requested: PrivacyClass | "best_available"
  readonly allowFallback: boolean
}

/** The class a call is promised, and which deployments may keep the promise. */
export interface PrivacyDecision {
  readonly served: PrivacyClass
  /** The planned models that earn it, in plan order. */
  readonly models: ReadonlyArray<Model>
  /** Recorded with the receipt: the class served, and a downgrade if the caller allowed one. */
  readonly events: ReadonlyArray<CallEvent>
  /** Whether a deployment may serve at the promised class now (earned; attested when confidential). */
  readonly admits: (deployment: Deployment) => boolean
  /** Confidential calls: the attestation verdict a deployment serves under. */
  readonly verdictOf: (deploymentId: string) => string | undefined
}

export class PrivacyPolicy extends Context.Tag("svc/PrivacyPolicy")<PrivacyPolicy, {
  /** Reads the request's envelope; an unknown or contradictory class is a 400. */
  readonly ask: (request: ChatRequest) => Effect.Effect<PrivacyAsk, InvalidRequest>
  /** The promise for a call whose planned models are `models` (never empty), best first. */
  readonly decide: (
    ask: PrivacyAsk,
    models: ReadonlyArray<Model>
  ) => Effect.Effect<PrivacyDecision, PrivacyClassUnavailable | RuntimeUnavailable>
  /** The response's privacy block for a call served at `served` by `deployment`. */
  readonly block: (served: PrivacyClass, deployment: Deployment) => PrivacyBlock
}>() {}
