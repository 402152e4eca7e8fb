/**
 * The route-planning stage on its own (a fixed catalogue, scripted health
 * views, the real router modes and privacy policy, no server): which routes a
 * call gets and in which order, how much is held, and each refusal.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { CatalogueFixed } from "../layers/catalogue/CatalogueFixed.ts"
import { PricingLive } from "../layers/billing/PricingLive.ts"
import { AttestationTest } from "../layers/privacy/AttestationTest.ts"
import { PrivacyPolicyLive } from "../layers/privacy/PrivacyPolicyLive.ts"
import { TranscriptsMemory } from "../layers/privacy/TranscriptsMemory.ts"
import { RoutePlannerLive } from "../layers/routing/RoutePlannerLive.ts"
import { RouterStrategiesLive } from "../layers/routing/RouterStrategiesLive.ts"
import { RouterModes } from "../plugins/router/index.ts"
import type { AdmittedChat } from "../services/Admission.ts"
import { Billing } from "../services/Billing.ts"
import type { Deployment, Model } from "../services/Catalogue.ts"
import { type DeploymentHealth, Health } from "../services/Health.ts"
import { Pricing } from "../services/Pricing.ts"
import { RoutePlanner } from "../services/RoutePlanner.ts"
import { chatRequest, scriptedAdapter, testDeployment, testModel, usd } from "./support/pipeline.ts"
import { testConfig } from "./support/testConfig.ts"

const { adapter } = scriptedAdapter([{ text: "unused" }])
const cheap = testModel("svc/cheap", { pricing: { input: usd(1), output: usd(1) }, quality: 0.3 })
const dear = testModel("svc/dear", { pricing: { input: usd(4), output: usd(8) }, quality: 0.9 })
const small = testModel("svc/small", { context: 50, capabilities: ["chat", "streaming"] })
const cheapA = testDeployment(cheap, "a/0", { adapter, cost: { input: usd(0.2), output: usd(0.2) } })
const cheapB = testDeployment(cheap, "b/0", { adapter, cost: { input: usd(0.1), output: usd(0.1) } })
const cheapThin = testDeployment(cheap, "thin/0", { adapter, cost: { input: usd(0.9), output: usd(0.9) } })
const dearA = testDeployment(dear, "a/1", { adapter, cost: { input: usd(2), output: usd(4) } })
const smallA = testDeployment(small, "a/2", { adapter })

/** Health views to script: every deployment closed and unmeasured unless listed as open or given a p95. */
const HealthScripted = (open: ReadonlyArray<string>, p95: Readonly<Record<string, number>> = {}) =>
  Layer.succeed(Health, {
    record: () => Effect.void,
    admits: (id) => Effect.succeed(!open.includes(id)),
    view: (id): DeploymentHealth => ({
      deployment: id,
      state: open.includes(id) ? "open" : "closed",
      consecutiveFailures: 0,
      requests: 0,
      failures: 0,
      fallbacks: 0,
      p50LatencyMs: p95[id] !== undefined ? p95[id] / 2 : undefined,
      p95LatencyMs: p95[id],
      p50TtftMs: undefined,
      tokensPerSecond: undefined,
      retryAt: undefined
    })
  })

/** Only the estimate of billing is used in planning. */
const BillingEstimates = Layer.effect(
  Billing,
  Effect.map(Pricing, (pricing) => ({
    estimate: pricing.estimateFor,
    hold: () => Effect.die("not used"),
    withHold: () => Effect.die("not used"),
    withHoldDuring: () => Effect.die("not used"),
    holdDuring: () => Effect.die("not used"),
    settle: () => Effect.die("not used"),
    release: () => Effect.die("not used"),
    drained: Effect.die("not used"),
    settled: Effect.void
  }))
)

const planner = (
  options: {
    readonly open?: ReadonlyArray<string>
    readonly p95?: Readonly<Record<string, number>>
    readonly config?: unknown
  } = {}
) =>
  RoutePlannerLive.pipe(
    Layer.provide(Layer.mergeAll(PrivacyPolicyLive, BillingEstimates, RouterModes)),
    Layer.provideMerge(Layer.mergeAll(
      CatalogueFixed([
        { model: cheap, deployments: [cheapA, cheapB, cheapThin] },
        { model: dear, deployments: [dearA] },
        { model: small, deployments: [smallA] }
      ]),
      HealthScripted(options.open ?? [], options.p95),
      RouterStrategiesLive,
      AttestationTest({})
    )),
    Layer.provideMerge(TranscriptsMemory),
    Layer.provideMerge(PricingLive),
    Layer.provideMerge(testConfig(options.config ?? {}))
  )

const admitted = (request: Partial<AdmittedChat["request"]>, inputTokens = 20): AdmittedChat => ({
  principal: { keyId: "key_1", accountId: "acct_1", scopes: ["chat"] },
  request: chatRequest(request),
  privacy: { requested: "standard_route", allowFallback: false },
  inputTokens
})

const plan = (request: Partial<AdmittedChat["request"]>, inputTokens?: number) =>
  Effect.flatMap(RoutePlanner, (routes) => routes.plan(admitted(request, inputTokens)))

const ids = (targets: ReadonlyArray<{ readonly deployment: Deployment }>) => targets.map((t) => t.deployment.id)

describe("route planning stage", () => {
  it.effect("tries the asked model's deployments cheapest upstream first, then the fallback list, and holds the largest estimate", () =>
    Effect.gen(function*() {
      const pricing = yield* Pricing
      const route = yield* plan({ model: "svc/cheap", models: ["svc/dear"], max_tokens: 100 })
      expect(ids(route.targets)).toEqual(["b/0", "a/0", "thin/0", "a/1"])
      expect(route.reason).toBe("requested model")
      const estimate = (model: Model) => pricing.estimateFor(model, 20, 100).total
      expect(route.amount).toBe(estimate(dear))
      expect(route.amount > estimate(cheap)).toBe(true)
    }).pipe(Effect.provide(planner())))

  it.effect("leaves out deployments below the class's margin floor, and refuses when none is left", () =>
    Effect.gen(function*() {
      const route = yield* plan({ model: "svc/cheap" })
      expect(ids(route.targets)).toEqual(["b/0", "a/0"])
      const refusal = yield* Effect.flip(plan({ model: "svc/dear" }))
      expect(refusal._tag).toBe("MarginFloorViolated")
    }).pipe(Effect.provide(planner({ config: { marginFloor: { standard_route: "0.8" } } }))))

  it.effect("leaves out open circuits; with every route open the call is refused as recovering", () =>
    Effect.gen(function*() {
      expect(ids((yield* plan({ model: "svc/cheap" })).targets)).toEqual(["thin/0"])
      const refusal = yield* Effect.flip(plan({ model: "svc/dear" }))
      expect(refusal).toMatchObject({ _tag: "UpstreamError", message: expect.stringContaining("recovering") })
    }).pipe(Effect.provide(planner({ open: ["a/0", "b/0", "a/1"] }))))

  it.effect("lets a router mode rank the catalogue", () =>
    Effect.gen(function*() {
      const cheapest = yield* plan({ model: "cheapest" })
      expect(cheapest.targets[0]!.model.id).toBe("svc/cheap")
      const best = yield* plan({ model: "best" })
      expect(best.targets[0]!.model.id).toBe("svc/dear")
      expect(best.reason).toContain("best")
    }).pipe(Effect.provide(planner())))

  it.effect("refuses what no model asked for can serve: a missing capability, or too little context", () =>
    Effect.gen(function*() {
      const tools = [{ type: "function" as const, function: { name: "lookup" } }]
      expect(yield* Effect.flip(plan({ model: "svc/small", tools }))).toMatchObject({ _tag: "InvalidRequest", param: "tools" })
      expect(yield* Effect.flip(plan({ model: "svc/small" }, 60))).toMatchObject({ _tag: "ContextLengthExceeded" })
      expect(yield* Effect.flip(plan({ model: "svc/nope" }))).toMatchObject({ _tag: "InvalidRequest", param: "model" })
    }).pipe(Effect.provide(planner())))

  it.effect("tells which models a router mode left out, and why, with the route", () =>
    Effect.gen(function*() {
      const route = yield* plan({ model: "fast" })
      expect(route.targets.map((target) => target.model.id)).not.toContain("svc/dear")
      expect(route.dropped).toEqual([{ model: "svc/dear", reason: expect.stringContaining("p95") }])
    }).pipe(Effect.provide(planner({ p95: { "a/0": 100, "b/0": 100, "thin/0": 100, "a/1": 2000, "a/2": 120 } }))))
})
