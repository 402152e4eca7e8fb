/**
 * The chat path as a unit, without a database or HTTP: the gateways and their stages over
 * the Test layers (LedgerMemory, EventLogMemory, HealthMemory,
 * TranscriptsMemory, SealedPromptsTest, AttestationTest, IdsTest) and the
 * sandbox provider. Shows what a pipeline unit test can assert directly: the
 * bill, the balance, the recorded events and the ids.
 */
import { expect } from "@effect/vitest"
import { Effect, Layer, type Scope } from "effect"
import { ConfigChecks } from "../layers/Core.ts"
import { RateLimitsMemory } from "../layers/admission/RateLimitStoreLive.ts"
import { LedgerMemory } from "../layers/billing/LedgerMemory.ts"
import { SettlementJournalMemory } from "../layers/billing/SettlementJournalMemory.ts"
import { openAccount } from "../layers/billing/memoryBank.ts"
import { PricingLive } from "../layers/billing/PricingLive.ts"
import { EventLogMemory, RecordedEvents } from "../layers/events/EventLogMemory.ts"
import { Gateways } from "../layers/gateway/Gateways.ts"
import { HealthMemory } from "../layers/health/HealthMemory.ts"
import { IdsTest } from "../layers/platform/IdsTest.ts"
import { AttestationTest } from "../layers/privacy/AttestationTest.ts"
import { SealedPromptsTest } from "../layers/privacy/SealedPromptsTest.ts"
import { TranscriptsMemory } from "../layers/privacy/TranscriptsMemory.ts"
import { Admission, type AdmittedChat } from "../services/Admission.ts"
import { isAnswered } from "../services/atOnce.ts"
import { ChatGateway } from "../services/ChatGateway.ts"
import { type Route, RoutePlanner } from "../services/RoutePlanner.ts"
import { Ledger } from "../services/Ledger.ts"
import { testConfig } from "./support/testConfig.ts"
import { layer } from "./support/layer.ts"

const Pipeline = Gateways.pipe(
  Layer.provideMerge(SettlementJournalMemory),
  Layer.provideMerge(
    Layer.mergeAll(LedgerMemory, HealthMemory, TranscriptsMemory, SealedPromptsTest(), AttestationTest({}), RateLimitsMemory)
  ),
  Layer.provideMerge(EventLogMemory),
  // The real catalogue (sandbox provider) and router modes, as the app builds them at start.
  Layer.provideMerge(ConfigChecks),
  Layer.provideMerge(Layer.mergeAll(PricingLive, IdsTest)),
  Layer.provideMerge(testConfig())
)

const principal = (accountId: string) => ({ keyId: "key_test", accountId, scopes: ["chat" as const] })

layer(Pipeline)("chat pipeline on the Test layers", (it) => {
  it.effect("given the call's fiber, admission and the route plan are made when called (Exits: no step of their own)", () =>
    Effect.gen(function*() {
      yield* openAccount({ id: "acct_once", balance: 1_000_000_000n })
      const admission = yield* Admission
      const planner = yield* RoutePlanner
      const request = { model: "svc/pro", messages: [{ role: "user" as const, content: "hello" }] }
      // As the chat lane serves a call: traces off (with them on, a stage is a span, made when it runs).
      let admittedCall: AdmittedChat | undefined
      const route = yield* Effect.scoped(Effect.withFiberRuntime<Route, unknown, Scope.Scope>((fiber) => {
        const admitted = admission.chat(request, principal("acct_once"), fiber)
        expect(isAnswered(admitted)).toBe(true)
        return Effect.flatMap(admitted, (call) => {
          admittedCall = call
          const planned = planner.plan(call, fiber)
          expect(isAnswered(planned)).toBe(true)
          return planned
        })
      })).pipe(Effect.withTracerEnabled(false))
      expect(route.targets[0]?.model.id).toBe("svc/pro")
      // Without the fiber, each is a stage made when it runs.
      expect(isAnswered(planner.plan(admittedCall!))).toBe(false)
    }))

  it.effect("a call is reserved, served by the sandbox, settled and recorded", () =>
    Effect.gen(function*() {
      yield* openAccount({ id: "acct_pipe", balance: 1_000_000_000n })
      const chat = yield* ChatGateway
      const { completion, receipt } = yield* Effect.scoped(chat.complete(
        { model: "svc/pro", messages: [{ role: "user", content: "hello" }] },
        principal("acct_pipe")
      ))
      expect(completion.model).toBe("svc/pro")
      expect(receipt).toMatchObject({ id: "rcpt_1", accountId: "acct_pipe", model: "svc/pro" })
      // The call is answered with its settlement's amounts; the receipt is written after it (at once here).
      const written = yield* Effect.flatMap(Ledger, (ledger) => ledger.receipt("acct_pipe", "rcpt_1"))
      expect(written.balanceAfter).toBe(1_000_000_000n - receipt.cost.total)
      expect(written).toMatchObject({ id: receipt.id, cost: receipt.cost, usage: receipt.usage, estimated: receipt.estimated })
      const types = (yield* Effect.flatMap(RecordedEvents, (events) => events.all)).map((event) => event.type)
      expect(types).toEqual(expect.arrayContaining(["payment.reserved", "payment.settled", "receipt.created"]))
    }))

  it.effect("an account that cannot cover the estimate is refused before any call", () =>
    Effect.gen(function*() {
      yield* openAccount({ id: "acct_poor", balance: 0n })
      const chat = yield* ChatGateway
      const refused = yield* Effect.flip(
        Effect.scoped(chat.complete({ model: "svc/pro", messages: [{ role: "user", content: "hello" }] }, principal("acct_poor")))
      )
      expect(refused._tag).toBe("InsufficientFunds")
    }))
})
