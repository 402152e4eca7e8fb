/**
 * The `jws-json` attestation verifier: the runtime answers `GET {url}?nonce=N`
 * with a JWS in flattened JSON serialization (RFC 7515 §7.2.2:
 * `{"protected", "payload", "signature"}`) signed by a key in `jwksUrl`, whose
 * payload is the JSON claims `{measurement, nonce, iat, exp}`. Verified like
 * the `jwt` kind: signature, nonce echo, measurement in the allow-list, not
 * expired, younger than `maxAgeSeconds`.
 */
import { Clock, Effect, Either } from "effect"
import { type FlattenedJWSInput, flattenedVerify } from "jose"
import {
  type AttestationClaims,
  type AttestationCommon,
  type AttestationRefused,
  type AttestationVerifierPlugin,
  checkClaims,
  registerVerifier
} from "../../services/Attestation.ts"
import { algorithms, makeEvidence, RuntimeEndpoints, type VerifierTuning } from "./evidence.ts"

/** What the verifier is handed: the common fields and its options. */
export type JwsJsonAttestation = AttestationCommon & RuntimeEndpoints

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const parseJson = (text: string): Either.Either<unknown, void> =>
  Either.try({ try: () => JSON.parse(text) as unknown, catch: () => undefined })

/** The flattened JWS out of the runtime's answer, when it is one (a protected header is required). */
const jwsOf = (body: string): FlattenedJWSInput | undefined => {
  const json = Either.getOrUndefined(parseJson(body))
  if (!isRecord(json)) return undefined
  const { header, payload, protected: protectedHeader, signature } = json
  if (typeof protectedHeader !== "string" || typeof payload !== "string" || typeof signature !== "string") return undefined
  if (header !== undefined && !isRecord(header)) return undefined
  return { protected: protectedHeader, payload, signature, ...(header === undefined ? {} : { header }) }
}

export const makeJwsJsonVerifier = (tuning: VerifierTuning = {}): AttestationVerifierPlugin<RuntimeEndpoints> => {
  const evidence = makeEvidence(tuning)

  const verify = (config: JwsJsonAttestation, nonce: string): Effect.Effect<AttestationClaims, AttestationRefused> =>
    Effect.gen(function*() {
      const keySet = yield* evidence.keySetFor(config.jwksUrl)
      const body = yield* evidence.fetchEvidence(config.url, nonce, "application/jose+json, application/json")
      const jws = jwsOf(body)
      if (jws === undefined) {
        return yield* Effect.fail(evidence.refused("signature_invalid", "the runtime's answer is not a flattened JSON JWS"))
      }
      const { payload } = yield* Effect.tryPromise({
        try: () => flattenedVerify(jws, keySet, { algorithms }),
        catch: evidence.refusalOf
      })
      const claims = Either.getOrUndefined(parseJson(new TextDecoder().decode(payload)))
      if (!isRecord(claims)) {
        return yield* Effect.fail(evidence.refused("signature_invalid", "the JWS payload is not a JSON object of claims"))
      }
      const checked = yield* evidence.claimsOf(claims)
      const now = yield* Clock.currentTimeMillis
      return yield* checkClaims(config, nonce, checked, now, evidence.refusedAfter, evidence.skewSeconds)
    })

  return { id: "jws-json", options: RuntimeEndpoints, verify }
}

/** Registers the flattened-JSON-JWS verifier (kind `"jws-json"`). */
export const JwsJsonVerifier = registerVerifier(makeJwsJsonVerifier())
