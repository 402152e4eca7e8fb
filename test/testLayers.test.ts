/**
 * The small Test layers on their own, under the TestClock: HealthMemory's
 * breaker (open, half-open probe, close), TranscriptsMemory's rules and
 * expiry, IdsTest's counters, SealedPromptsTest's script and
 * AttestationTest's verdicts. (Ledger and EventLog have contract suites run
 * against the real layers too: test/ledgerContract.test.ts,
 * test/eventLogContract.test.ts.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { HealthMemory } from "../layers/health/HealthMemory.ts"
import { IdsTest } from "../layers/platform/IdsTest.ts"
import { AttestationTest } from "../layers/privacy/AttestationTest.ts"
import { SealedPromptsTest } from "../layers/privacy/SealedPromptsTest.ts"
import { TranscriptsMemory } from "../layers/privacy/TranscriptsMemory.ts"
import { Attestation } from "../services/Attestation.ts"
import { Health, type Outcome } from "../services/Health.ts"
import { Ids } from "../services/Ids.ts"
import { SealedPrompts } from "../services/SealedPrompts.ts"
import { Transcripts } from "../services/Transcripts.ts"
import { testConfig } from "./support/testConfig.ts"

const outcome = (ok: boolean, extra: Partial<Outcome> = {}): Outcome => ({
  deployment: "d1",
  model: "svc/swift",
  ok,
  latencyMs: 40,
  attempt: 1,
  ...extra
})

const health = HealthMemory.pipe(
  Layer.provide(testConfig({ routing: { health: { failureThreshold: 2, cooldownSeconds: 10, maxCooldownSeconds: 15 } } }))
)

describe("HealthMemory", () => {
  it.effect("opens at the threshold, lets one probe through after the cooldown, and closes on its success", () =>
    Effect.gen(function*() {
      const h = yield* Health
      yield* h.record(outcome(false))
      expect(h.view("d1")).toMatchObject({ state: "closed", consecutiveFailures: 1, requests: 1, failures: 1 })
      yield* h.record(outcome(false))
      expect(h.view("d1").state).toBe("open")
      expect(h.view("d1").retryAt?.getTime()).toBe(10_000)
      expect(yield* h.admits("d1")).toBe(false)
      yield* TestClock.adjust("10 seconds")
      expect(h.view("d1").state).toBe("half_open")
      expect([yield* h.admits("d1"), yield* h.admits("d1")]).toEqual([true, false])
      yield* h.record(outcome(true))
      expect(h.view("d1")).toMatchObject({ state: "closed", consecutiveFailures: 0, p50LatencyMs: 40 })
      expect(yield* h.admits("d1")).toBe(true)
    }).pipe(Effect.provide(health)))

  it.effect("a failed probe reopens for twice the cooldown, up to the maximum; Retry-After opens at once", () =>
    Effect.gen(function*() {
      const h = yield* Health
      yield* h.record(outcome(false))
      yield* h.record(outcome(false))
      yield* TestClock.adjust("10 seconds")
      expect(yield* h.admits("d1")).toBe(true)
      yield* h.record(outcome(false))
      expect(h.view("d1").retryAt?.getTime()).toBe(25_000)
      yield* h.record(outcome(false, { deployment: "d2", retryAfterSeconds: 3 }))
      expect(h.view("d2")).toMatchObject({ state: "open", retryAt: new Date(13_000) })
    }).pipe(Effect.provide(health)))
})

describe("TranscriptsMemory", () => {
  const call = { receiptId: "rcpt_1", accountId: "acct_1", messages: [{ role: "user" as const, content: "hi" }], completion: { content: "hello" } }

  it.effect("keeps standard_route text when turned on, for its account, until it expires", () =>
    Effect.gen(function*() {
      const transcripts = yield* Transcripts
      yield* transcripts.keep({ ...call, servedClass: "standard_route" })
      yield* transcripts.keep({ ...call, receiptId: "rcpt_2", servedClass: "protected_provider_route" })
      expect((yield* transcripts.get("acct_1", "rcpt_1")).completion).toEqual({ content: "hello" })
      expect((yield* Effect.flip(transcripts.get("acct_2", "rcpt_1")))._tag).toBe("NotFound")
      expect((yield* Effect.flip(transcripts.get("acct_1", "rcpt_2")))._tag).toBe("NotFound")
      yield* TestClock.adjust("2 days")
      expect((yield* Effect.flip(transcripts.get("acct_1", "rcpt_1")))._tag).toBe("NotFound")
    }).pipe(Effect.provide(TranscriptsMemory.pipe(Layer.provide(testConfig({ promptStorage: { standardRoute: true, retentionDays: 1 } }))))))

  it.effect("keeps nothing when prompt storage is off", () =>
    Effect.gen(function*() {
      const transcripts = yield* Transcripts
      expect(transcripts.keeps("standard_route")).toBe(false)
      yield* transcripts.keep({ ...call, servedClass: "standard_route" })
      expect((yield* Effect.flip(transcripts.get("acct_1", "rcpt_1")))._tag).toBe("NotFound")
    }).pipe(Effect.provide(TranscriptsMemory.pipe(Layer.provide(testConfig())))))
})

describe("IdsTest, SealedPromptsTest, AttestationTest", () => {
  it.effect("ids count per prefix from 1 in each build", () =>
    Effect.gen(function*() {
      const ids = yield* Ids
      expect([ids.make("rcpt"), ids.make("rcpt"), ids.make("evt"), ids.completion()]).toEqual(["rcpt_1", "rcpt_2", "evt_1", "chatcmpl-1"])
    }).pipe(Effect.provide(IdsTest)))

  it.effect("sealed prompts open only as scripted; rotation publishes the next key", () =>
    Effect.gen(function*() {
      const sealed = yield* SealedPrompts
      expect(yield* sealed.open("known")).toEqual([{ role: "user", content: "secret" }])
      expect((yield* Effect.flip(sealed.open("other"))).param).toBe("privacy.encryptedPrompt")
      expect((yield* sealed.rotate).kid).toBe("test-key-2")
      expect((yield* sealed.publicKeys).map((key) => key.kid)).toEqual(["test-key-2"])
    }).pipe(Effect.provide(SealedPromptsTest({ known: [{ role: "user", content: "secret" }] }))))

  it.effect("attestation answers scripted verdicts by the clock and refuses unscripted providers", () =>
    Effect.gen(function*() {
      const attestation = yield* Attestation
      const config = { url: "http://tee.test", jwksUrl: "http://tee.test/jwks", measurements: ["m1"], maxAgeSeconds: 60 }
      yield* TestClock.adjust("5 seconds")
      expect(yield* attestation.verdict("tee", config)).toEqual({
        id: "att_tee_1",
        measurement: "m1",
        verifiedAt: new Date(5_000),
        expiresAt: new Date(65_000)
      })
      expect((yield* Effect.flip(attestation.verdict("bad", config))).reason).toBe("signature_invalid")
      expect((yield* Effect.flip(attestation.verdict("unknown", config))).reason).toBe("verifier_unreachable")
    }).pipe(Effect.provide(AttestationTest({ tee: { measurement: "m1", ttlSeconds: 60 }, bad: { refuse: "signature_invalid" } }))))
})
