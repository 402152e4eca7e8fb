/**
 * The privacy-policy stage on its own (a fixed catalogue, scripted
 * attestation verdicts, no server): which class a call is promised, which
 * deployments may keep the promise, the events it records with the receipt,
 * and the refusals it fails with (with what the `privacy.rejected` event needs).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { CatalogueFixed } from "../layers/catalogue/CatalogueFixed.ts"
import { AttestationTest } from "../layers/privacy/AttestationTest.ts"
import { PrivacyPolicyLive } from "../layers/privacy/PrivacyPolicyLive.ts"
import { TranscriptsMemory } from "../layers/privacy/TranscriptsMemory.ts"
import { Catalogue, type Model } from "../services/Catalogue.ts"
import { PrivacyPolicy } from "../services/PrivacyPolicy.ts"
import { scriptedAdapter, testDeployment, testModel } from "./support/pipeline.ts"
import { testConfig } from "./support/testConfig.ts"

const attestation = { url: "http://127.0.0.1:1/a", jwksUrl: "http://127.0.0.1:1/j", measurements: ["m"], maxAgeSeconds: 60 }
const careful = { stores: false, logs: false, trains: false, operatorControlled: false }
const { adapter } = scriptedAdapter([{ text: "unused" }])

const open = testModel("svc/open")
const guarded = testModel("svc/guarded")
const enclave = testModel("svc/enclave")
const openDeployment = testDeployment(open, "open/0", { adapter })
const guardedDeployment = testDeployment(guarded, "guarded/0", {
  adapter,
  classes: ["standard_route", "protected_provider_route"],
  policy: { ...careful, trains: false }
})
const attested = testDeployment(enclave, "attested/0", {
  adapter,
  classes: ["standard_route", "protected_provider_route", "confidential_runtime_route"],
  policy: { ...careful, attestation }
})
const unattested = testDeployment(enclave, "unattested/0", {
  adapter,
  classes: ["standard_route", "protected_provider_route", "confidential_runtime_route"],
  policy: { ...careful, attestation }
})

const catalogue = (entries: ReadonlyArray<readonly [Model, ReadonlyArray<typeof openDeployment>]>) =>
  PrivacyPolicyLive.pipe(
    Layer.provideMerge(CatalogueFixed(entries.map(([model, deployments]) => ({ model, deployments })))),
    // The attested runtime attests; the other refuses.
    Layer.provide(AttestationTest({
      attested: { measurement: "m" },
      unattested: { refuse: "measurement_not_allowed", retryAfterSeconds: 7 }
    })),
    Layer.provide(TranscriptsMemory.pipe(Layer.provide(testConfig())))
  )

const Policy = catalogue([[open, [openDeployment]], [guarded, [guardedDeployment]], [enclave, [attested, unattested]]])

/** The policy, and the catalogue's view of some models (their classes are those their deployments earn). */
const stage = Effect.gen(function*() {
  const catalogue = yield* Catalogue
  const models = (...ids: ReadonlyArray<Model>) => ids.map((model) => Option.getOrThrow(catalogue.get(model.id)))
  return { policy: yield* PrivacyPolicy, models }
})

describe("privacy policy stage", () => {
  it.effect("refuses a class no planned model earns, naming the class asked for", () =>
    Effect.gen(function*() {
      const { models, policy } = yield* stage
      const refusal = yield* Effect.flip(
        policy.decide({ requested: "protected_provider_route", allowFallback: false }, models(open))
      )
      expect(refusal).toMatchObject({ _tag: "PrivacyClassUnavailable", requested: "protected_provider_route", param: "privacy.class" })
    }).pipe(Effect.provide(Policy)))

  it.effect("downgrades only when allowed, says so in its events, and keeps later models to the class served", () =>
    Effect.gen(function*() {
      const { models, policy } = yield* stage
      const decision = yield* policy.decide({ requested: "private_gateway_route", allowFallback: true }, models(guarded, open))
      expect(decision.served).toBe("protected_provider_route")
      expect(decision.models.map((model) => model.id)).toEqual(["svc/guarded"])
      expect(decision.events.map((event) => event.type)).toEqual(["privacy.downgraded", "privacy.class_served"])
      expect(decision.admits(guardedDeployment)).toBe(true)
      expect(decision.admits(openDeployment)).toBe(false)
    }).pipe(Effect.provide(Policy)))

  it.effect("serves the confidential class only on deployments with a fresh verdict, and names it", () =>
    Effect.gen(function*() {
      const { models, policy } = yield* stage
      const decision = yield* policy.decide({ requested: "confidential_runtime_route", allowFallback: false }, models(enclave))
      expect(decision.admits(attested)).toBe(true)
      expect(decision.admits(unattested)).toBe(false)
      const verdict = decision.verdictOf("attested/0")
      expect(verdict).toMatch(/^att_/)
      expect(decision.events).toEqual([
        { type: "privacy.class_served", data: { class: "confidential_runtime_route", attestation_verdicts: [verdict] } }
      ])
    }).pipe(Effect.provide(Policy)))

  it.effect("fails closed when no runtime attests, with the refusal's reason and when to retry", () =>
    Effect.gen(function*() {
      const { models, policy } = yield* stage
      const refusal = yield* Effect.flip(
        policy.decide({ requested: "best_available", allowFallback: false }, models(enclave))
      )
      expect(refusal).toMatchObject({
        _tag: "RuntimeUnavailable",
        requested: "confidential_runtime_route",
        reason: "measurement_not_allowed",
        retryAfterSeconds: 7
      })
    }).pipe(Effect.provide(catalogue([[enclave, [unattested]]]))))

  it.effect("states in the block whether the provider trains, and that the gateway keeps no text", () =>
    Effect.gen(function*() {
      const { policy } = yield* stage
      expect(policy.block("standard_route", openDeployment)).toMatchObject({
        class: "standard_route",
        training_on_prompts: true,
        svc_stores_prompts: false,
        svc_logs_prompts: false,
        upstream_disclosed: false
      })
      expect(policy.block("protected_provider_route", guardedDeployment).training_on_prompts).toBe(false)
    }).pipe(Effect.provide(Policy)))
})
