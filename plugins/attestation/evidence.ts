/**
 * What the attestation verifiers share: the options of a runtime reached over
 * HTTP (`url`, `jwksUrl`), fetching its evidence for a nonce, its remote key
 * set, jose failures as refusal reasons, and the evidence's claims read out of
 * a verified payload. Each verifier file adds only its evidence format.
 */
import { Clock, Effect, Schema } from "effect"
import { createRemoteJWKSet, errors } from "jose"
import { type AttestationClaims, AttestationRefused, type AttestationRefusalReason } from "../../services/Attestation.ts"
import { retryAfterSeconds } from "../support/upstreamHttp.ts"

const HttpUrl = Schema.String.pipe(Schema.pattern(/^https?:\/\//, { message: () => "expected an http(s) URL" }))

/** The options of a runtime answering `GET {url}?nonce=N`, its signing keys at `jwksUrl`. */
export const RuntimeEndpoints = Schema.Struct({ url: HttpUrl, jwksUrl: HttpUrl })
export type RuntimeEndpoints = typeof RuntimeEndpoints.Type

/** How a verifier talks to runtimes; the same for every provider. */
export interface VerifierTuning {
  /** Per request to the runtime and to its JWKS. */
  readonly timeoutMs?: number
  /** `retryAfterSeconds` of a refusal because the runtime or its JWKS did not answer (unless it sent `Retry-After`). */
  readonly unreachableRetryAfterSeconds?: number
  /** `retryAfterSeconds` of a refusal of the evidence itself (signature, nonce, measurement, expiry). */
  readonly refusedRetryAfterSeconds?: number
  /** Clock disagreement tolerated on `iat` / `exp`. */
  readonly clockSkewSeconds?: number
}

/** Only asymmetric signatures: the key comes from a public JWKS. */
export const algorithms = ["ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA", "Ed25519"]

export const describe = (error: unknown): string => {
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : ""
  return `${error instanceof Error ? error.message : String(error)}${cause}`
}

/** The shared half of a verifier, with its tuning applied. */
export const makeEvidence = (tuning: VerifierTuning = {}) => {
  const timeoutMs = tuning.timeoutMs ?? 5_000
  const unreachableAfter = tuning.unreachableRetryAfterSeconds ?? 5
  const refusedAfter = tuning.refusedRetryAfterSeconds ?? 30
  const skewSeconds = tuning.clockSkewSeconds ?? 5

  const refused = (reason: AttestationRefusalReason, detail: string, retryAfter?: number) =>
    new AttestationRefused({
      reason,
      detail,
      retryAfterSeconds: retryAfter ?? (reason === "verifier_unreachable" ? unreachableAfter : refusedAfter)
    })

  // One remote key set per JWKS URL: jose caches it and refetches on an unknown `kid` (key rotation).
  const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>()
  const keySetFor = (jwksUrl: string) =>
    Effect.try({
      try: () => {
        let keySet = keySets.get(jwksUrl)
        if (keySet === undefined) {
          keySet = createRemoteJWKSet(new URL(jwksUrl), { timeoutDuration: timeoutMs, cooldownDuration: 10_000 })
          keySets.set(jwksUrl, keySet)
        }
        return keySet
      },
      catch: () => refused("verifier_unreachable", `jwksUrl is not a valid URL: ${jwksUrl}`)
    })

  /** GET {url}?nonce=N, the body as text; transport errors, timeouts and non-2xx are `verifier_unreachable`. */
  const fetchEvidence = (url: string, nonce: string, accept: string) =>
    Effect.gen(function*() {
      const target = yield* Effect.try({
        try: () => {
          const target = new URL(url)
          target.searchParams.set("nonce", nonce)
          return target
        },
        catch: () => refused("verifier_unreachable", `attestation url is not a valid URL: ${url}`)
      })
      const response = yield* Effect.tryPromise({
        try: (signal) => fetch(target, { headers: { accept }, signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) }),
        catch: (error) => refused("verifier_unreachable", `attestation runtime did not answer: ${describe(error)}`)
      })
      if (!response.ok) {
        yield* Effect.promise(() => response.body?.cancel().catch(() => undefined) ?? Promise.resolve())
        const after = retryAfterSeconds(response.headers.get("retry-after") ?? undefined, yield* Clock.currentTimeMillis)
        return yield* Effect.fail(refused(
          "verifier_unreachable",
          `attestation runtime answered ${response.status}`,
          after === undefined ? undefined : Math.max(1, Math.ceil(after))
        ))
      }
      return yield* Effect.tryPromise({
        try: () => response.text(),
        catch: (error) => refused("verifier_unreachable", `attestation answer broke off: ${describe(error)}`)
      })
    })

  /** A jose failure as its refusal reason. */
  const refusalOf = (error: unknown): AttestationRefused => {
    const detail = describe(error)
    if (error instanceof errors.JWTExpired) return refused("attestation_expired", detail)
    if (error instanceof errors.JWTClaimValidationFailed) {
      return refused(error.claim === "nonce" ? "nonce_mismatch" : error.claim === "measurement" ? "measurement_not_allowed" : "attestation_expired", detail)
    }
    if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) {
      return refused("verifier_unreachable", `JWKS: ${detail}`)
    }
    if (
      error instanceof errors.JWSSignatureVerificationFailed ||
      error instanceof errors.JWKSNoMatchingKey ||
      error instanceof errors.JWKSMultipleMatchingKeys ||
      error instanceof errors.JWSInvalid ||
      error instanceof errors.JWTInvalid ||
      error instanceof errors.JWKInvalid ||
      error instanceof errors.JOSEAlgNotAllowed ||
      error instanceof errors.JOSENotSupported
    ) return refused("signature_invalid", detail)
    // What is left: the JWKS fetch failed (refused connection, non-200 answer).
    return refused("verifier_unreachable", `JWKS: ${detail}`)
  }

  /** The claims every evidence format carries (`measurement`, `nonce`, `iat`, `exp` in seconds), out of a verified payload. */
  const claimsOf = (payload: Readonly<Record<string, unknown>>): Effect.Effect<AttestationClaims, AttestationRefused> => {
    const { measurement, nonce, iat, exp } = payload
    if (typeof nonce !== "string") return Effect.fail(refused("nonce_mismatch", "the evidence has no nonce claim"))
    if (typeof measurement !== "string") {
      return Effect.fail(refused("measurement_not_allowed", "the evidence has no measurement claim"))
    }
    if (typeof iat !== "number" || typeof exp !== "number") {
      return Effect.fail(refused("attestation_expired", "the evidence lacks iat or exp: its freshness is unknown"))
    }
    return Effect.succeed({ measurement, nonce, issuedAt: new Date(iat * 1000), expiresAt: new Date(exp * 1000) })
  }

  return { refused, refusedAfter, skewSeconds, keySetFor, fetchEvidence, refusalOf, claimsOf }
}
