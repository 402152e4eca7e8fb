/**
 * The chat path composed from its real stages, with storage and upstreams
 * swapped for doubles (a recording ledger and event log, scripted adapters,
 * recorded health): no server, no database. What each end of a call leaves
 * behind — one settle or one release, the events with or without a receipt,
 * the health records — and what the caller gets, and when: a JSON call's
 * settlement and health wait for its scope to close, after the answer.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Exit, Layer, Scope, Stream } from "effect"
import { AdmissionLive } from "../layers/admission/AdmissionLive.ts"
import { RateLimitsMemory } from "../layers/admission/RateLimitStoreLive.ts"
import { BillingLive } from "../layers/billing/BillingLive.ts"
import { SettlementJournalMemory } from "../layers/billing/SettlementJournalMemory.ts"
import { PricingLive } from "../layers/billing/PricingLive.ts"
import { CatalogueFixed } from "../layers/catalogue/CatalogueFixed.ts"
import { CallRecorderLive } from "../layers/events/CallRecorderLive.ts"
import { ChatGatewayLive } from "../layers/gateway/ChatGatewayLive.ts"
import { IdsLive } from "../layers/platform/IdsLive.ts"
import { AttestationTest } from "../layers/privacy/AttestationTest.ts"
import { SealedPromptsTest } from "../layers/privacy/SealedPromptsTest.ts"
import { TranscriptsMemory } from "../layers/privacy/TranscriptsMemory.ts"
import { PrivacyPolicyLive } from "../layers/privacy/PrivacyPolicyLive.ts"
import { RoutePlannerLive } from "../layers/routing/RoutePlannerLive.ts"
import { RouterStrategiesLive } from "../layers/routing/RouterStrategiesLive.ts"
import { UpstreamLive } from "../layers/upstream/UpstreamLive.ts"
import { RouterModes } from "../plugins/router/index.ts"
import type { ChatRequest } from "../services/Chat.ts"
import { ChatGateway } from "../services/ChatGateway.ts"
import { EventLog, type NewEvent } from "../services/EventLog.ts"
import { Health, type Outcome } from "../services/Health.ts"
import { RequestNotTranslatable, UpstreamFailure } from "../services/Providers.ts"
import {
  chatRequest,
  recordingLedger,
  type Scripted,
  scriptedAdapter,
  testDeployment,
  testModel
} from "./support/pipeline.ts"
import { testConfig } from "./support/testConfig.ts"

const principal = { keyId: "key_1", accountId: "acct_1", scopes: ["chat" as const] }
const fails = (status: number): Scripted => ({ fail: new UpstreamFailure({ kind: "status", status, detail: "scripted" }) })

/** The whole chat path over doubles: `primary` and `backup` deployments of svc/a, answering from their scripts. */
const pipeline = (primary: ReadonlyArray<Scripted>, backup: ReadonlyArray<Scripted> = [fails(503)]) => {
  const ledger = recordingLedger()
  const events: Array<NewEvent> = []
  const outcomes: Array<Outcome> = []
  const model = testModel("svc/a")
  const first = scriptedAdapter(primary)
  const second = scriptedAdapter(backup)
  // Equal cost would share traffic at random: the primary is cheaper, so it is tried first.
  const deployments = [
    testDeployment(model, "primary/0", { adapter: first.adapter, cost: { input: 1n, output: 1n } }),
    testDeployment(model, "backup/0", { adapter: second.adapter })
  ]
  const health = Layer.succeed(Health, {
    record: (outcome) => Effect.sync(() => void outcomes.push(outcome)),
    admits: () => Effect.succeed(true),
    view: (id) => ({ deployment: id, state: "closed", consecutiveFailures: 0, requests: 0, failures: 0, fallbacks: 0 }) as any
  })
  const stages = Layer.mergeAll(AdmissionLive, RoutePlannerLive).pipe(
    Layer.provideMerge(Layer.mergeAll(PrivacyPolicyLive, BillingLive, UpstreamLive, CallRecorderLive))
  )
  const layer = ChatGatewayLive.pipe(
    Layer.provide(stages),
    Layer.provide(SettlementJournalMemory),
    Layer.provide(RouterModes),
    Layer.provide(Layer.mergeAll(
      CatalogueFixed([{ model, deployments }]),
      health,
      ledger.layer,
      Layer.succeed(EventLog, {
        record: (event) => Effect.sync(() => void events.push(event)),
        list: () => Effect.die("not read here")
      }),
      AttestationTest({}),
      SealedPromptsTest(),
      RouterStrategiesLive,
      IdsLive,
      PricingLive,
      RateLimitsMemory
    )),
    Layer.provideMerge(TranscriptsMemory),
    Layer.provideMerge(testConfig({ routing: { retry: { maxAttempts: 2, backoffBaseMs: 1, backoffCapMs: 1 } } }))
  )
  return { layer, ledger, events, outcomes, primary: first, backup: second }
}

/** One call, in a scope of its own as a request has. */
const complete = (request: Partial<ChatRequest> = {}) =>
  Effect.scoped(Effect.flatMap(ChatGateway, (gateway) => gateway.complete(chatRequest(request), principal)))

const types = (events: ReadonlyArray<{ readonly type: string }>) => events.map((event) => event.type)

describe("chat pipeline on doubles", () => {
  it.live("a JSON call served by its first route: relabelled, settled once, its events with the receipt", () => {
    const world = pipeline([{ text: "hi there", usage: { input: 9, output: 2 } }])
    return Effect.gen(function*() {
      const { completion, receipt } = yield* complete()
      expect(completion).toMatchObject({ model: "svc/a", usage: { prompt_tokens: 9, completion_tokens: 2 } })
      expect(completion.id).toMatch(/^chatcmpl-/)
      expect(completion.privacy?.class).toBe("standard_route")
      expect(world.ledger.log).toEqual([`reserve ${receipt.id}`, `settle ${receipt.id}`])
      expect(types(world.ledger.bills[0]!.events ?? [])).toEqual(["provider.route", "privacy.class_served"])
      expect(world.events).toEqual([])
      expect(world.outcomes).toMatchObject([{ deployment: "primary/0", ok: true, outputTokens: 2, attempt: 1 }])
    }).pipe(Effect.provide(world.layer))
  })

  it.live("hands the settlement to the ledger and records the attempt's health only as the caller's scope closes: after the answer", () => {
    const world = pipeline([{ text: "hi there", usage: { input: 9, output: 2 } }])
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { receipt } = yield* Scope.extend(Effect.flatMap(ChatGateway, (gateway) => gateway.complete(chatRequest({}), principal)), scope)
      // The answer and its amounts are there; what it does not wait for is not done yet.
      expect(receipt.cost.total).toBeGreaterThan(0n)
      expect(world.ledger.log).toEqual([`reserve ${receipt.id}`])
      expect(world.outcomes).toEqual([])
      yield* Scope.close(scope, Exit.void)
      expect(world.ledger.log).toEqual([`reserve ${receipt.id}`, `settle ${receipt.id}`])
      expect(world.outcomes).toMatchObject([{ deployment: "primary/0", ok: true }])
    }).pipe(Effect.provide(world.layer))
  })

  it.live("falls back to the next route and bills the one that served, counting usage it did not report", () => {
    const world = pipeline([fails(503)], [{ text: "from the backup" }])
    return Effect.gen(function*() {
      const { receipt } = yield* complete()
      expect(receipt.attempts.map((attempt) => attempt.outcome)).toEqual(["error", "ok"])
      // What went wrong is on the failed attempt alone (the operators' record; the receipt's API leaves it out).
      expect(receipt.attempts.map((attempt) => "failure" in attempt ? attempt.failure : "none")).toEqual(["status 503", "none"])
      expect(receipt.usage.outputTokens).toBeGreaterThan(0)
      expect(types(world.ledger.bills[0]!.events ?? [])).toEqual([
        "provider.route",
        "provider.fallback",
        "provider.route",
        "privacy.class_served"
      ])
      expect(world.outcomes.map((outcome) => [outcome.deployment, outcome.ok])).toEqual([["primary/0", false], ["backup/0", true]])
    }).pipe(Effect.provide(world.layer))
  })

  it.live("every route failed: 502, the hold released, the routing events recorded without a receipt", () => {
    const world = pipeline([fails(500)], [fails(502)])
    return Effect.gen(function*() {
      const error = yield* Effect.flip(complete())
      expect(error._tag).toBe("UpstreamError")
      expect(world.ledger.log).toEqual(["reserve rcpt_1", "release rcpt_1"])
      expect(types(world.events)).toEqual(["provider.route", "provider.fallback", "provider.route"])
      expect(world.events.every((event) => event.accountId === "acct_1" && event.receiptId === undefined)).toBe(true)
    }).pipe(Effect.provide(world.layer))
  })

  it.live("a request no plugin can express is a 400 naming why, tried on every route, with nobody blamed", () => {
    const untranslatable: Scripted = { fail: new RequestNotTranslatable({ reason: "audio parts are not supported" }) }
    const world = pipeline([untranslatable], [untranslatable])
    return Effect.gen(function*() {
      const error = yield* Effect.flip(complete())
      expect(error).toMatchObject({ _tag: "RefusedByModel", message: expect.stringContaining("audio parts") })
      expect(world.primary.calls).toHaveLength(1)
      expect(world.backup.calls).toHaveLength(1)
      expect(world.outcomes).toEqual([])
      expect(world.ledger.log).toEqual(["reserve rcpt_1", "release rcpt_1"])
    }).pipe(Effect.provide(world.layer))
  })

  it.live("a class the model cannot earn: 422, recorded as privacy.rejected, nothing held or sent", () => {
    const world = pipeline([{ text: "never" }])
    return Effect.gen(function*() {
      const error = yield* Effect.flip(complete({ privacy: { class: "protected_provider_route" } }))
      expect(error._tag).toBe("PrivacyClassUnavailable")
      expect(world.events).toMatchObject([
        { type: "privacy.rejected", data: { model: "svc/a", requested: "protected_provider_route", reason: "not_earnable" } }
      ])
      expect(world.ledger.log).toEqual([])
      expect(world.primary.calls).toEqual([])
    }).pipe(Effect.provide(world.layer))
  })

  it.live("a stream: relabelled chunks, the privacy block on the final one, settled at the end with the reported usage", () => {
    const world = pipeline([{ pieces: ["Hel", "lo"], usage: { input: 7, output: 3 } }])
    return Effect.gen(function*() {
      const gateway = yield* ChatGateway
      const chunks = yield* Effect.scoped(
        Effect.flatMap(gateway.stream(chatRequest({ stream: true }), principal), (streamed) =>
          Stream.runCollect(streamed.chunks))
      )
      const all = Chunk.toReadonlyArray(chunks)
      expect(all.every((chunk) => chunk.model === "svc/a" && chunk.id.startsWith("chatcmpl-"))).toBe(true)
      expect(all.filter((chunk) => chunk.privacy !== undefined)).toHaveLength(1)
      expect(all.at(-1)!.choices[0]?.finish_reason).toBe("stop")
      expect(world.ledger.log).toEqual(["reserve rcpt_1", "settle rcpt_1"])
      expect(world.ledger.bills[0]!.usage).toEqual({ inputTokens: 7, outputTokens: 3 })
    }).pipe(Effect.provide(world.layer))
  })

  it.live("a stream the caller stops reading is billed for what was generated; one never read is released", () => {
    const world = pipeline([{ pieces: ["one ", "two ", "three"] }])
    return Effect.gen(function*() {
      const gateway = yield* ChatGateway
      yield* Effect.scoped(
        Effect.flatMap(gateway.stream(chatRequest({ stream: true }), principal), (streamed) =>
          Stream.runDrain(Stream.take(streamed.chunks, 1)))
      )
      expect(world.ledger.log).toEqual(["reserve rcpt_1", "settle rcpt_1"])
      expect(world.ledger.bills[0]!.usage.outputTokens).toBeGreaterThan(0)
      yield* Effect.scoped(gateway.stream(chatRequest({ stream: true }), principal))
      expect(world.ledger.log.slice(2)).toEqual(["reserve rcpt_2", "release rcpt_2"])
    }).pipe(Effect.provide(world.layer))
  })
})
