/**
 * The JWT attestation verifier (CONTRACT.md "Configuration"): the runtime
 * answers `GET {url}?nonce=N` with a JWT signed by a key in `jwksUrl`, with
 * claims `measurement`, `nonce`, `iat`, `exp`. Verified = signature, nonce
 * echo, measurement in the allow-list, not expired, younger than
 * `maxAgeSeconds`. Every verification asks with a fresh random nonce.
 */
import { randomBytes } from "node:crypto"
import { Clock, Effect, Layer } from "effect"
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from "jose"
import {
  type AttestationClaims,
  type AttestationConfig,
  AttestationRefused,
  type AttestationRefusalReason,
  AttestationVerifier,
  type AttestationVerifierPlugin,
  checkClaims
} from "../../services/Attestation.ts"
import { retryAfterSeconds } from "../support/upstreamHttp.ts"

export interface JwtVerifierOptions {
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
const algorithms = ["ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA", "Ed25519"]

/** A new nonce per verification: 128 random bits, base64url. */
export const newNonce = () => randomBytes(16).toString("base64url")

/** The compact JWT out of the runtime's answer: the body itself, or a JSON `{token|jwt|attestation}`. */
const tokenOf = (body: string): string | undefined => {
  const text = body.trim()
  if (text.startsWith("{")) {
    try {
      const json = JSON.parse(text) as Record<string, unknown>
      const token = json.token ?? json.jwt ?? json.attestation
      return typeof token === "string" ? token.trim() : undefined
    } catch {
      return undefined
    }
  }
  return text === "" ? undefined : text
}

export const makeJwtVerifier = (options: JwtVerifierOptions = {}): AttestationVerifierPlugin => {
  const timeoutMs = options.timeoutMs ?? 5_000
  const unreachableAfter = options.unreachableRetryAfterSeconds ?? 5
  const refusedAfter = options.refusedRetryAfterSeconds ?? 30
  const skew = options.clockSkewSeconds ?? 5

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
  const fetchEvidence = (url: string, nonce: string) =>
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
        try: (signal) =>
          fetch(target, {
            headers: { accept: "application/jwt, application/json, text/plain" },
            signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
          }),
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

  const verify = (config: AttestationConfig, nonce: string): Effect.Effect<AttestationClaims, AttestationRefused> =>
    Effect.gen(function*() {
      const keySet = yield* keySetFor(config.jwksUrl)
      const body = yield* fetchEvidence(config.url, nonce)
      const token = tokenOf(body)
      if (token === undefined) return yield* Effect.fail(refused("signature_invalid", "the runtime's answer holds no JWT"))
      const now = yield* Clock.currentTimeMillis
      const { payload } = yield* Effect.tryPromise({
        try: () => jwtVerify(token, keySet, { algorithms, currentDate: new Date(now), clockTolerance: skew }),
        catch: refusalOf
      })
      const claims = yield* claimsOf(payload)
      return yield* checkClaims(config, nonce, claims, now, refusedAfter, skew)
    })

  const claimsOf = (payload: JWTPayload): Effect.Effect<AttestationClaims, AttestationRefused> => {
    const { measurement, nonce, iat, exp } = payload
    if (typeof nonce !== "string") return Effect.fail(refused("nonce_mismatch", "the JWT has no nonce claim"))
    if (typeof measurement !== "string") {
      return Effect.fail(refused("measurement_not_allowed", "the JWT has no measurement claim"))
    }
    if (typeof iat !== "number" || typeof exp !== "number") {
      return Effect.fail(refused("attestation_expired", "the JWT lacks iat or exp: its freshness is unknown"))
    }
    return Effect.succeed({ measurement, nonce, issuedAt: new Date(iat * 1000), expiresAt: new Date(exp * 1000) })
  }

  return { id: "jwt", verify }
}

const describe = (error: unknown): string => {
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : ""
  return `${error instanceof Error ? error.message : String(error)}${cause}`
}

/** The plugin with its defaults. */
export const plugin: AttestationVerifierPlugin = makeJwtVerifier()

/** Makes the JWT verifier the one `Attestation` uses. */
export const JwtAttestationVerifierLive = (options: JwtVerifierOptions = {}): Layer.Layer<AttestationVerifier> =>
  Layer.sync(AttestationVerifier, () => makeJwtVerifier(options))
