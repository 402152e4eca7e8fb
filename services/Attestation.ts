/**
 * Confidential-runtime attestation (CONTRACT.md "Configuration", attestation
 * paragraph): a provider's `privacy.attestation` names a runtime that proves
 * what code it runs. `Attestation` hands out a fresh verdict for a provider or
 * refuses; it fails closed (no fresh verdict, no confidential route).
 *
 * Verifiers are plugins keyed by the block's `kind` (default `"jwt"`), like
 * provider plugins and router modes: each declares the schema of its own
 * options and registers itself in `AttestationVerifiers`
 * (plugins/attestation/index.ts lists them).
 */
import { Context, Data, Effect, Either, Option } from "effect"
import { type Attestation as AttestationSchema, AttestationCommon as CommonSchema } from "./Config.ts"
import { decodeOptions, type OptionsRefused, type Plugin, registerIn, type Registry } from "./Registry.ts"

/** A provider's `privacy.attestation` block: the common fields and its kind's options, not yet decoded. */
export type AttestationConfig = typeof AttestationSchema.Type

/** The fields every kind shares (what `checkClaims` and the verdict's lifetime need). */
export type AttestationCommon = typeof CommonSchema.Type

/** The kind of a block that names none. */
export const DEFAULT_ATTESTATION_KIND = "jwt"

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

/**
 * A verifier plugin: `id` is the `kind` it verifies, `options` the schema of
 * the block's other fields (unknown ones are refused). `verify` fetches the
 * runtime's evidence for `nonce` and checks it (`checkClaims` included), or refuses.
 */
export interface AttestationVerifierPlugin<Options = any> extends Plugin<Options> {
  readonly verify: (attestation: AttestationCommon & Options, nonce: string) => Effect.Effect<AttestationClaims, AttestationRefused>
}

/** Where verifier plugins register themselves at start. */
export class AttestationVerifiers extends Context.Tag("svc/AttestationVerifiers")<
  AttestationVerifiers,
  Registry<AttestationVerifierPlugin>
>() {}

/** The Layer a verifier file exports: registering `verifier` is all it does. */
export const registerVerifier = registerIn(AttestationVerifiers)

/** A block's verifier, bound to the block's decoded options: verifies for a nonce. */
export type BoundVerifier = (nonce: string) => Effect.Effect<AttestationClaims, AttestationRefused>

const commonFields = new Set(Object.keys(CommonSchema.fields))

/**
 * The verifier `config.kind` names, bound to the block's options as its schema
 * decodes them; otherwise the field at fault inside the block (`kind`, `url`, …).
 */
export const verifierFor = (
  verifiers: Registry<AttestationVerifierPlugin>,
  config: AttestationConfig
): Either.Either<BoundVerifier, OptionsRefused> => {
  const kind = config.kind ?? DEFAULT_ATTESTATION_KIND
  const plugin = verifiers.get(kind)
  if (Option.isNone(plugin)) {
    return Either.left({ field: "kind", reason: `unknown attestation kind "${kind}" (known: ${verifiers.ids().join(", ")})` })
  }
  const common: AttestationCommon = { kind, measurements: config.measurements, maxAgeSeconds: config.maxAgeSeconds }
  const own = Object.fromEntries(Object.entries(config).filter(([key]) => !commonFields.has(key)))
  return Either.map(
    decodeOptions(plugin.value, own),
    (options): BoundVerifier => (nonce) => plugin.value.verify({ ...options, ...common }, nonce)
  )
}

/** Fresh verdicts per provider, cached until they lapse. */
export class Attestation extends Context.Tag("svc/Attestation")<Attestation, {
  /** A verdict fresh now for the provider's runtime; refused when there is none (fail closed). */
  readonly verdict: (providerId: string, attestation: AttestationConfig) => Effect.Effect<Verdict, AttestationRefused>
}>() {}

/** How long a verdict from these claims is good for: the earlier of `exp` and `iat + maxAgeSeconds`. */
export const verdictExpiry = (config: AttestationCommon, claims: AttestationClaims): Date =>
  new Date(Math.min(claims.expiresAt.getTime(), claims.issuedAt.getTime() + config.maxAgeSeconds * 1000))

/**
 * The checks every verifier makes once the evidence's signature holds: nonce
 * echo, measurement allow-list, not expired, younger than `maxAgeSeconds`.
 * `skewSeconds` tolerates clocks that disagree a little about `iat`.
 */
export const checkClaims = (
  config: AttestationCommon,
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
