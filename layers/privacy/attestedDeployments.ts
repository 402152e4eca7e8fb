/**
 * The attestation verdicts of the confidential deployments of some models:
 * deployment id → verdict id for those whose runtime attests now, and the
 * first refusal (for the caller's reason). Refusals are logged for operators.
 */
import { Effect } from "effect"
import type { Attestation, AttestationRefused } from "../../services/Attestation.ts"
import type { Catalogue, Model } from "../../services/Catalogue.ts"

/** Deployment id → verdict id of those that attest now, and the first refusal. */
export interface Attested {
  readonly attested: ReadonlyMap<string, string>
  readonly refusal: AttestationRefused | undefined
}

export const attestedDeployments = (
  catalogue: Catalogue["Type"],
  attestation: Attestation["Type"],
  models: ReadonlyArray<Model>
): Effect.Effect<Attested> =>
  Effect.gen(function*() {
    const attested = new Map<string, string>()
    let refusal: AttestationRefused | undefined
    for (const deployment of models.flatMap((model) => catalogue.deployments(model.id))) {
      const config = deployment.policy.attestation
      if (!deployment.privacyClasses.includes("confidential_runtime_route") || config === undefined) continue
      const verdict = yield* Effect.either(attestation.verdict(deployment.provider.id, config))
      if (verdict._tag === "Right") {
        attested.set(deployment.id, verdict.right.id)
        continue
      }
      refusal ??= verdict.left
      yield* Effect.logWarning("attestation refused").pipe(
        Effect.annotateLogs({ deployment: deployment.id, reason: verdict.left.reason, detail: verdict.left.detail })
      )
    }
    return { attested, refusal }
  })
