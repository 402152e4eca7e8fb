/** The Attestation service and its verifier kinds against a fake confidential runtime: verdicts, refusals, caching and refresh. */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Fiber, Layer } from "effect"
import { AttestationLive, type AttestationLiveOptions } from "../layers/privacy/AttestationLive.ts"
import { AttestationVerifiersLive } from "../layers/privacy/AttestationVerifiersLive.ts"
import { AttestationVerifierPlugins } from "../plugins/attestation/index.ts"
import { makeJwtVerifier } from "../plugins/attestation/jwt.ts"
import { Attestation, type AttestationRefusalReason, AttestationRefused, registerVerifier } from "../services/Attestation.ts"
import {
  acquireFakeAttestationRuntime,
  closedPort,
  GOOD_MEASUREMENT,
  type RuntimeMode
} from "./support/fakeAttestationRuntime.ts"

/** The service over the JWT verifier, living in the test scope. */
const makeService = (options: AttestationLiveOptions = {}) =>
  Layer.build(
    AttestationLive(options).pipe(Layer.provide(
      // The JWT verifier alone, tuned for the tests, in a registry of its own.
      registerVerifier(makeJwtVerifier({ timeoutMs: 2_000, refusedRetryAfterSeconds: 30 })).pipe(
        Layer.provideMerge(AttestationVerifiersLive)
      )
    ))
  ).pipe(Effect.map((context) => Context.get(context, Attestation)))

const refusalOf = <A>(effect: Effect.Effect<A, AttestationRefused>) =>
  Effect.flip(effect).pipe(Effect.map((error) => ({ reason: error.reason, retryAfterSeconds: error.retryAfterSeconds })))

describe("JWT attestation verifier", () => {
  const cases: ReadonlyArray<[RuntimeMode, AttestationRefusalReason]> = [
    ["expired", "attestation_expired"],
    ["too_old", "attestation_expired"],
    ["wrong_measurement", "measurement_not_allowed"],
    ["wrong_nonce", "nonce_mismatch"],
    ["bad_signature", "signature_invalid"],
    ["down", "verifier_unreachable"],
    ["hangup", "verifier_unreachable"]
  ]
  for (const [mode, reason] of cases) {
    it.scopedLive(`${mode} is refused as ${reason}`, () =>
      Effect.gen(function*() {
        const runtime = yield* acquireFakeAttestationRuntime
        runtime.mode = mode
        const attestation = yield* makeService()
        const refusal = yield* refusalOf(attestation.verdict(`p-${mode}`, runtime.config()))
        expect(refusal.reason).toBe(reason)
        expect(refusal.retryAfterSeconds).toBeGreaterThan(0)
        expect(runtime.hits.attestation).toBe(1)
      }))
  }

  it.scopedLive("a 503 passes its Retry-After on; other refusals use the configured hold", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      runtime.mode = "down"
      runtime.retryAfter = "17"
      const verifier = makeJwtVerifier({ timeoutMs: 2_000, refusedRetryAfterSeconds: 42 })
      expect(yield* refusalOf(verifier.verify(runtime.config(), "n-1"))).toEqual({
        reason: "verifier_unreachable",
        retryAfterSeconds: 17
      })
      runtime.mode = "wrong_measurement"
      expect(yield* refusalOf(verifier.verify(runtime.config(), "n-2"))).toEqual({
        reason: "measurement_not_allowed",
        retryAfterSeconds: 42
      })
    }))

  it.scopedLive("a refused connection and an unreachable JWKS are verifier_unreachable", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      const port = yield* closedPort
      const verifier = makeJwtVerifier({ timeoutMs: 2_000 })
      const noRuntime = yield* refusalOf(verifier.verify(runtime.config({ url: `http://127.0.0.1:${port}/attestation` }), "n"))
      expect(noRuntime.reason).toBe("verifier_unreachable")
      const noJwks = yield* refusalOf(verifier.verify(runtime.config({ jwksUrl: `http://127.0.0.1:${port}/jwks` }), "n"))
      expect(noJwks.reason).toBe("verifier_unreachable")
      const jwks404 = yield* refusalOf(verifier.verify(runtime.config({ jwksUrl: `${runtime.baseUrl}/nothing` }), "n"))
      expect(jwks404.reason).toBe("verifier_unreachable")
    }))

  it.scopedLive("a measurement outside the allow-list is refused even with a good signature", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      const verifier = makeJwtVerifier()
      const refusal = yield* refusalOf(verifier.verify(runtime.config({ measurements: ["sha384:something-else"] }), "n"))
      expect(refusal.reason).toBe("measurement_not_allowed")
    }))
})

describe("Attestation service", () => {
  it.scopedLive("a valid attestation gives a verdict that lapses at iat + maxAgeSeconds when that is earlier", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      runtime.ttlSeconds = 600
      const attestation = yield* makeService()
      const before = Date.now()
      const verdict = yield* attestation.verdict("p1", runtime.config({ maxAgeSeconds: 120 }))
      expect(verdict.id).toMatch(/^att_[A-Za-z0-9_-]{20,}$/)
      expect(verdict.measurement).toBe(GOOD_MEASUREMENT)
      expect(verdict.verifiedAt.getTime()).toBeGreaterThanOrEqual(before)
      expect(verdict.verifiedAt.getTime()).toBeLessThanOrEqual(Date.now())
      expect(verdict.expiresAt.getTime()).toBe((runtime.last!.iat + 120) * 1000)
    }))

  it.scopedLive("a verdict lapses at the token's exp when that is earlier", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      runtime.ttlSeconds = 45
      const attestation = yield* makeService()
      const verdict = yield* attestation.verdict("p1", runtime.config({ maxAgeSeconds: 300 }))
      expect(verdict.expiresAt.getTime()).toBe(runtime.last!.exp * 1000)
    }))

  it.scopedLive("every verification asks with a fresh nonce", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      const attestation = yield* makeService()
      yield* attestation.verdict("a", runtime.config())
      yield* attestation.verdict("b", runtime.config())
      yield* attestation.verdict("c", runtime.config())
      expect(runtime.nonces).toHaveLength(3)
      expect(new Set(runtime.nonces).size).toBe(3)
      for (const nonce of runtime.nonces) expect(nonce.length).toBeGreaterThanOrEqual(16)
    }))

  it.scopedLive("the verdict is cached: a second call does not ask the runtime", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      const attestation = yield* makeService()
      const first = yield* attestation.verdict("p1", runtime.config())
      const second = yield* attestation.verdict("p1", runtime.config())
      expect(second).toEqual(first)
      expect(runtime.hits.attestation).toBe(1)
      // Another provider, or another config for the same provider, is verified on its own.
      yield* attestation.verdict("p2", runtime.config())
      yield* attestation.verdict("p1", runtime.config({ maxAgeSeconds: 200 }))
      expect(runtime.hits.attestation).toBe(3)
    }))

  it.scopedLive("concurrent callers share one verification", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      const attestation = yield* makeService()
      const verdicts = yield* Effect.all(Array.from({ length: 8 }, () => attestation.verdict("p1", runtime.config())), {
        concurrency: "unbounded"
      })
      expect(new Set(verdicts.map((verdict) => verdict.id)).size).toBe(1)
      expect(runtime.hits.attestation).toBe(1)
    }))

  it.scopedLive("a refusal is remembered for its retryAfterSeconds, then the runtime is asked again", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      runtime.mode = "down"
      runtime.retryAfter = "1"
      const attestation = yield* makeService()
      expect((yield* refusalOf(attestation.verdict("p1", runtime.config()))).reason).toBe("verifier_unreachable")
      expect((yield* refusalOf(attestation.verdict("p1", runtime.config()))).reason).toBe("verifier_unreachable")
      expect(runtime.hits.attestation).toBe(1)
      runtime.mode = "valid"
      yield* Effect.sleep("1100 millis")
      const verdict = yield* attestation.verdict("p1", runtime.config())
      expect(verdict.measurement).toBe(GOOD_MEASUREMENT)
      expect(runtime.hits.attestation).toBe(2)
    }))

  it.scopedLive("a used verdict is refreshed in the background shortly before it lapses", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      const attestation = yield* makeService({ refreshLeadSeconds: 30 })
      // Lifetime 3s: the refresh comes a fifth of it (0.6s) before the end.
      const config = runtime.config({ maxAgeSeconds: 3 })
      const first = yield* attestation.verdict("p1", config)
      expect(runtime.hits.attestation).toBe(1)
      yield* Effect.sleep("1000 millis")
      expect(runtime.hits.attestation).toBe(1)
      yield* Effect.sleep(Math.max(0, first.expiresAt.getTime() - Date.now() - 100))
      expect(runtime.hits.attestation).toBe(2)
      const second = yield* attestation.verdict("p1", config)
      expect(second.id).not.toBe(first.id)
      expect(second.expiresAt.getTime()).toBeGreaterThan(first.expiresAt.getTime())
      expect(runtime.hits.attestation).toBe(2)
    }))

  it.scopedLive("an unused verdict is not refreshed again", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      const attestation = yield* makeService()
      const config = runtime.config({ maxAgeSeconds: 2 })
      yield* attestation.verdict("p1", config)
      // The first verdict was used: refreshed once; the refreshed one nobody asked for is left to lapse.
      yield* Effect.sleep("4500 millis")
      expect(runtime.hits.attestation).toBe(2)
    }))

  it.scopedLive("fails closed once the verdict lapsed and the runtime went down", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      runtime.retryAfter = "1"
      const attestation = yield* makeService()
      const config = runtime.config({ maxAgeSeconds: 2 })
      const verdict = yield* attestation.verdict("p1", config)
      runtime.mode = "down"
      // Still fresh: served from the cache though the runtime is down.
      yield* Effect.sleep("500 millis")
      expect((yield* attestation.verdict("p1", config)).id).toBe(verdict.id)
      yield* Effect.sleep(Math.max(0, verdict.expiresAt.getTime() - Date.now() + 200))
      const refusal = yield* refusalOf(attestation.verdict("p1", config))
      expect(refusal.reason).toBe("verifier_unreachable")
      // The background refresh tried (and failed) before the verdict lapsed.
      expect(runtime.hits.attestation).toBeGreaterThanOrEqual(2)
    }))

  it.scopedLive("fails closed with a refused connection too", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      const port = yield* closedPort
      const attestation = yield* makeService()
      const result = yield* Effect.either(
        attestation.verdict("p1", runtime.config({ url: `http://127.0.0.1:${port}/attestation` }))
      )
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        expect(result.left).toBeInstanceOf(AttestationRefused)
        expect(result.left.reason).toBe("verifier_unreachable")
      }
    }))

  it.scopedLive("a caller giving up does not cancel the shared verification", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      const attestation = yield* makeService()
      const fiber = yield* Effect.fork(attestation.verdict("p1", runtime.config()))
      yield* Fiber.interrupt(fiber)
      const verdict = yield* attestation.verdict("p1", runtime.config())
      expect(verdict.measurement).toBe(GOOD_MEASUREMENT)
      expect(runtime.hits.attestation).toBeLessThanOrEqual(1)
    }))
})

/** The service over every shipped verifier kind, registered as the app registers them. */
const makeServiceOfAllKinds = Layer.build(
  AttestationLive().pipe(Layer.provide(AttestationVerifierPlugins.pipe(Layer.provideMerge(AttestationVerifiersLive))))
).pipe(Effect.map((context) => Context.get(context, Attestation)))

describe("jws-json attestation verifier, picked by kind", () => {
  const cases: ReadonlyArray<[RuntimeMode, AttestationRefusalReason]> = [
    ["expired", "attestation_expired"],
    ["too_old", "attestation_expired"],
    ["wrong_measurement", "measurement_not_allowed"],
    ["wrong_nonce", "nonce_mismatch"],
    ["bad_signature", "signature_invalid"],
    ["tampered", "signature_invalid"],
    ["down", "verifier_unreachable"]
  ]
  for (const [mode, reason] of cases) {
    it.scopedLive(`${mode} is refused as ${reason}`, () =>
      Effect.gen(function*() {
        const runtime = yield* acquireFakeAttestationRuntime
        runtime.format = "jws-json"
        runtime.mode = mode
        const attestation = yield* makeServiceOfAllKinds
        expect((yield* refusalOf(attestation.verdict(`p-${mode}`, runtime.config()))).reason).toBe(reason)
        expect(runtime.hits.attestation).toBe(1)
      }))
  }

  it.scopedLive("a valid flattened JWS gives a verdict; a JWT where one is expected does not", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      runtime.format = "jws-json"
      const attestation = yield* makeServiceOfAllKinds
      const verdict = yield* attestation.verdict("p1", runtime.config({ maxAgeSeconds: 120 }))
      expect(verdict.measurement).toBe(GOOD_MEASUREMENT)
      expect(verdict.expiresAt.getTime()).toBe(runtime.last!.exp * 1000)
      runtime.format = "jwt"
      const mismatch = yield* refusalOf(attestation.verdict("p2", { ...runtime.config(), kind: "jws-json" }))
      expect(mismatch.reason).toBe("signature_invalid")
      // The same runtime, named as the default kind, is verified as a JWT.
      expect((yield* attestation.verdict("p3", runtime.config())).measurement).toBe(GOOD_MEASUREMENT)
    }))

  it.scopedLive("a tampered JWT is signature_invalid; an unknown kind fails closed without asking", () =>
    Effect.gen(function*() {
      const runtime = yield* acquireFakeAttestationRuntime
      runtime.mode = "tampered"
      const attestation = yield* makeServiceOfAllKinds
      expect((yield* refusalOf(attestation.verdict("p1", runtime.config()))).reason).toBe("signature_invalid")
      const unknown = yield* refusalOf(attestation.verdict("p2", { ...runtime.config(), kind: "tpm-quote" }))
      expect(unknown.reason).toBe("verifier_unreachable")
      expect(runtime.hits.attestation).toBe(1)
    }))
})
