/**
 * Attestation for unit tests, with scripted verdicts instead of verifiers:
 * per provider, either a measurement (a fresh verdict `att_<provider>_<n>`,
 * verified now by the `Clock` and good for `ttlSeconds`, 300 by default) or
 * a refusal reason. A provider the script does not name is refused as
 * `verifier_unreachable`: like the real service, it fails closed. The script
 * may be a function, to change its answer between calls.
 *
 * Not modelled: verifiers and evidence (nonces, signatures, the allow-list
 * of the provider's `privacy.attestation` — the config is ignored), and
 * caching (every call makes a new verdict).
 */
import { Clock, Effect, Layer } from "effect"
import {
  Attestation,
  type AttestationConfig,
  AttestationRefused,
  type AttestationRefusalReason
} from "../../services/Attestation.ts"

export type AttestationScript =
  | { readonly measurement: string; readonly ttlSeconds?: number }
  | { readonly refuse: AttestationRefusalReason; readonly retryAfterSeconds?: number }

export const AttestationTest = (
  script:
    | Readonly<Record<string, AttestationScript>>
    | ((providerId: string, config: AttestationConfig) => AttestationScript | undefined)
): Layer.Layer<Attestation> =>
  Layer.sync(Attestation, () => {
    let made = 0
    const scripted = typeof script === "function"
      ? script
      : (providerId: string) => Object.hasOwn(script, providerId) ? script[providerId] : undefined
    return Attestation.of({
      verdict: (providerId, config) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const answer = scripted(providerId, config) ?? { refuse: "verifier_unreachable" as const }
          if ("refuse" in answer) {
            return new AttestationRefused({
              reason: answer.refuse,
              retryAfterSeconds: answer.retryAfterSeconds ?? 30,
              detail: `scripted refusal for ${providerId}`
            })
          }
          return Effect.succeed({
            id: `att_${providerId}_${++made}`,
            measurement: answer.measurement,
            verifiedAt: new Date(now),
            expiresAt: new Date(now + (answer.ttlSeconds ?? 300) * 1000)
          })
        })
    })
  })
