/**
 * The privacy policy: the class asked (privacyAsk.ts), the class promised
 * (privacyClass.ts), and for the confidential class a fresh attestation
 * verdict per deployment (attestedDeployments.ts); the response's privacy
 * block states what the gateway does with the text of a call at that class.
 */
import { Effect, Layer } from "effect"
import { PrivacyClassUnavailable, RuntimeUnavailable } from "../../services/ApiError.ts"
import { Attestation } from "../../services/Attestation.ts"
import { Catalogue, type Deployment } from "../../services/Catalogue.ts"
import type { CallEvent } from "../../services/Ledger.ts"
import { privacyBlock } from "../../services/Privacy.ts"
import { type PrivacyDecision, PrivacyPolicy } from "../../services/PrivacyPolicy.ts"
import { Transcripts } from "../../services/Transcripts.ts"
import { type Attested, attestedDeployments } from "./attestedDeployments.ts"
import { privacyAskOf } from "./privacyAsk.ts"
import { chooseClass } from "./privacyClass.ts"

const CONFIDENTIAL = "confidential_runtime_route"

/** A class other than the confidential one is served without attestation. */
const UNATTESTED: Attested = { attested: new Map(), refusal: undefined }

export const PrivacyPolicyLive = Layer.effect(
  PrivacyPolicy,
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const attestation = yield* Attestation
    const transcripts = yield* Transcripts

    return PrivacyPolicy.of({
      ask: privacyAskOf,
      // An answer at once (services/atOnce.ts) unless the class served is confidential: every chat call decides.
      decide: (ask, planned) => {
        // Fallbacks and retries only go to deployments that earn the promised class: never weaker.
        const first = planned[0]!
        const choice = chooseClass(ask, planned.map((model) => model.privacyClasses))
        const requested = choice.requested
        if (choice._tag === "Refuse") {
          return Effect.fail(
            new PrivacyClassUnavailable({
              message: `${first.id} cannot be served at ${requested}; set privacy.allowFallbackToLowerClass to accept ` +
                `the strongest class it earns, or choose another model (GET /v1/models lists each model's classes).`,
              param: "privacy.class",
              requested
            })
          )
        }
        const served = choice.served
        const models = planned.filter((model) => model.privacyClasses.includes(served))
        const decided = ({ attested, refusal }: Attested): Effect.Effect<PrivacyDecision, RuntimeUnavailable> => {
          // A confidential route serves only while its runtime's attestation verdict is fresh; with none,
          // the call fails closed (503 with the reason), never silently served weaker.
          if (served === CONFIDENTIAL && attested.size === 0) {
            const reason = refusal?.reason ?? "verifier_unreachable"
            return Effect.fail(
              new RuntimeUnavailable({
                message: `No confidential runtime of this model has a valid attestation now (reason: ${reason}).`,
                param: "privacy.class",
                retryAfterSeconds: Math.max(1, Math.ceil(refusal?.retryAfterSeconds ?? 30)),
                requested,
                reason
              })
            )
          }
          const events: Array<CallEvent> = []
          if (choice.downgraded) events.push({ type: "privacy.downgraded", data: { requested, served, model: first.id } })
          events.push({
            type: "privacy.class_served",
            data: attested.size > 0 ? { class: served, attestation_verdicts: [...attested.values()] } : { class: served }
          })
          return Effect.succeed({
            served,
            models,
            events,
            admits: (deployment: Deployment) =>
              deployment.privacyClasses.includes(served) && (served !== CONFIDENTIAL || attested.has(deployment.id)),
            verdictOf: (deploymentId: string) => attested.get(deploymentId)
          })
        }
        return served === CONFIDENTIAL
          ? Effect.flatMap(attestedDeployments(catalogue, attestation, models), decided)
          : decided(UNATTESTED)
      },
      block: (served, deployment) =>
        privacyBlock(served, deployment.policy.trains, transcripts.keeps(served) ? transcripts.retentionDays : undefined)
    })
  })
)
