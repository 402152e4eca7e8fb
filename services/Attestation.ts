/**
 * Confidential-runtime attestation (CONTRACT.md "Configuration", attestation
 * paragraph): a provider's `privacy.attestation` names a runtime that proves
 * what code it runs. `Attestation` hands out a fresh verdict for a provider or
 * refuses; it fails closed (no fresh verdict, no confidential route).
 *
 * Verifiers are plugins: one `AttestationVerifier` fetches and checks the
 * runtime's evidence for a nonce (plugins/attestation/jwt.ts is the JWT one);
 * another kind of evidence (a TEE quote) is one more plugin file.
 */
import { Context, Data, Effect, Layer } from "effect"
import type { Attestation as AttestationSchema } from "./Config.ts"

/** A provider's `privacy.attestation` block. */
export type AttestationConfig = typeof AttestationSchema.Type

export type AttestationRefusalReason =
  | "attestation_expired"
  | "signature_invalid"
  | "measurement_not_allowed"
  | "nonce_mismatch"
  | "verifier_unreachable"

/** No fresh, verified attestation: the confidential route is unavailable. */
export class AttestationRefused extends Data.TaggedError("AttestationRefused")<{
  readonly reason: AttestationRefusalReason
  /** When asking again may help (a `Retry-After` for the 503). */
  readonly retryAfterSeconds: number
  /** For operators' logs only: may name the runtime. */
  readonly detail: string
}> {}

/** What a verifier proved: the runtime's evidence, checked (signature, nonce echo, measurement, expiry, age). */
export interface AttestationClaims {
  readonly measurement: string
  /** The nonce the evidence echoes (equal to the one asked with). */
  readonly nonce: string
  readonly issuedAt: Date
  readonly expiresAt: Date
}

/** A verified, fresh attestation of one provider's runtime. */
export interface Verdict {
  /** `att_<random>`, for receipts and logs. */
  readonly id: string
  readonly measurement: string
  readonly verifiedAt: Date
  /** The earlier of the evidence's `exp` and `iat + maxAgeSeconds`. */
  readonly expiresAt: Date
}

/** A verifier plugin: fetches the runtime's evidence for `nonce` and checks it, or refuses. */
export interface AttestationVerifierPlugin {
  readonly id: string
  readonly verify: (config: AttestationConfig, nonce: string) => Effect.Effect<AttestationClaims, AttestationRefused>
}

/** The verifier the `Attestation` service uses. */
export class AttestationVerifier extends Context.Tag("svc/AttestationVerifier")<
  AttestationVerifier,
  AttestationVerifierPlugin
>() {}

/** The Layer a verifier plugin file exports. */
export const provideVerifier = (plugin: AttestationVerifierPlugin): Layer.Layer<AttestationVerifier> =>
  Layer.succeed(AttestationVerifier, plugin)

/** Fresh verdicts per provider, cached until they lapse. */
export class Attestation extends Context.Tag("svc/Attestation")<Attestation, {
  /** A verdict fresh now for the provider's runtime; refused when there is none (fail closed). */
  readonly verdict: (providerId: string, attestation: AttestationConfig) => Effect.Effect<Verdict, AttestationRefused>
}>() {}

/** How long a verdict from these claims is good for: the earlier of `exp` and `iat + maxAgeSeconds`. */
export const verdictExpiry = (config: AttestationConfig, claims: AttestationClaims): Date =>
  new Date(Math.min(claims.expiresAt.getTime(), claims.issuedAt.getTime() + config.maxAgeSeconds * 1000))

/**
 * The checks every verifier makes once the evidence's signature holds: nonce
 * echo, measurement allow-list, not expired, younger than `maxAgeSeconds`.
 * `skewSeconds` tolerates clocks that disagree a little about `iat`.
 */
export const checkClaims = (
  config: AttestationConfig,
  nonce: string,
  claims: AttestationClaims,
  now: number,
  refusedRetryAfterSeconds: number,
  skewSeconds = 5
): Effect.Effect<AttestationClaims, AttestationRefused> => {
  const refuse = (reason: AttestationRefusalReason, detail: string) =>
    Effect.fail(new AttestationRefused({ reason, retryAfterSeconds: refusedRetryAfterSeconds, detail }))
  if (claims.nonce !== nonce) return refuse("nonce_mismatch", "the evidence does not echo the nonce asked with")
  if (!config.measurements.includes(claims.measurement)) {
    return refuse("measurement_not_allowed", `measurement ${claims.measurement} is not in the allow-list`)
  }
  if (claims.expiresAt.getTime() <= now) return refuse("attestation_expired", "the evidence has expired")
  if (claims.issuedAt.getTime() > now + skewSeconds * 1000) {
    return refuse("attestation_expired", "the evidence claims to be issued in the future")
  }
  if (claims.issuedAt.getTime() + config.maxAgeSeconds * 1000 <= now) {
    return refuse("attestation_expired", `the evidence is older than ${config.maxAgeSeconds}s`)
  }
  return Effect.succeed(claims)
}
