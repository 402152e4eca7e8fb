/**
 * The `jwt` attestation verifier (CONTRACT.md "Configuration"), the default
 * kind: the runtime answers `GET {url}?nonce=N` with a JWT signed by a key in
 * `jwksUrl`, with claims `measurement`, `nonce`, `iat`, `exp`. Verified =
 * signature, nonce echo, measurement in the allow-list, not expired, younger
 * than `maxAgeSeconds`. Every verification asks with a fresh random nonce.
 */
import { randomBytes } from "node:crypto"
import { Clock, Effect } from "effect"
import { jwtVerify } from "jose"
import {
  type AttestationClaims,
  type AttestationCommon,
  AttestationRefused,
  type AttestationVerifierPlugin,
  checkClaims,
  registerVerifier
} from "../../services/Attestation.ts"
import { algorithms, makeEvidence, RuntimeEndpoints, type VerifierTuning } from "./evidence.ts"

export type JwtVerifierOptions = VerifierTuning

/** What the JWT verifier is handed: the common fields and its options. */
export type JwtAttestation = AttestationCommon & RuntimeEndpoints

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

export const makeJwtVerifier = (tuning: JwtVerifierOptions = {}): AttestationVerifierPlugin<RuntimeEndpoints> => {
  const evidence = makeEvidence(tuning)

  const verify = (config: JwtAttestation, nonce: string): Effect.Effect<AttestationClaims, AttestationRefused> =>
    Effect.gen(function*() {
      const keySet = yield* evidence.keySetFor(config.jwksUrl)
      const body = yield* evidence.fetchEvidence(config.url, nonce, "application/jwt, application/json, text/plain")
      const token = tokenOf(body)
      if (token === undefined) return yield* Effect.fail(evidence.refused("signature_invalid", "the runtime's answer holds no JWT"))
      const now = yield* Clock.currentTimeMillis
      const { payload } = yield* Effect.tryPromise({
        try: () => jwtVerify(token, keySet, { algorithms, currentDate: new Date(now), clockTolerance: evidence.skewSeconds }),
        catch: evidence.refusalOf
      })
      const claims = yield* evidence.claimsOf(payload)
      return yield* checkClaims(config, nonce, claims, now, evidence.refusedAfter, evidence.skewSeconds)
    })

  return { id: "jwt", options: RuntimeEndpoints, verify }
}

/** The plugin with its defaults. */
export const plugin = makeJwtVerifier()

/** Registers the JWT verifier (kind `"jwt"`). */
export const JwtVerifier = registerVerifier(plugin)
