/**
 * The chat path as a unit, without a database or HTTP: ChatGatewayLive over
 * the Test layers (LedgerMemory, EventLogMemory, HealthMemory,
 * TranscriptsMemory, SealedPromptsTest, AttestationTest, IdsTest) and the
 * sandbox provider. Shows what a pipeline unit test can assert directly: the
 * bill, the balance, the recorded events and the ids.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ProviderRegistryLive } from "../layers/catalogue/ProviderRegistryLive.ts"
import { CatalogueLive } from "../layers/catalogue/CatalogueLive.ts"
import { LedgerMemory } from "../layers/billing/LedgerMemory.ts"
import { openAccount } from "../layers/billing/memoryBank.ts"
import { PricingLive } from "../layers/billing/PricingLive.ts"
import { EventLogMemory, RecordedEvents } from "../layers/events/EventLogMemory.ts"
import { ChatGatewayLive } from "../layers/gateway/ChatGatewayLive.ts"
import { HealthMemory } from "../layers/health/HealthMemory.ts"
import { IdsTest } from "../layers/platform/IdsTest.ts"
import { AttestationTest } from "../layers/privacy/AttestationTest.ts"
import { SealedPromptsTest } from "../layers/privacy/SealedPromptsTest.ts"
import { TranscriptsMemory } from "../layers/privacy/TranscriptsMemory.ts"
import { RouterStrategiesLive } from "../layers/routing/RouterStrategiesLive.ts"
import { Plugins } from "../plugins/index.ts"
import { RouterModes } from "../plugins/router/index.ts"
import { ChatGateway } from "../services/ChatGateway.ts"
import { Ledger } from "../services/Ledger.ts"
import { testConfig } from "./support/testConfig.ts"

const Pipeline = ChatGatewayLive.pipe(
  Layer.provideMerge(Layer.mergeAll(LedgerMemory, HealthMemory, TranscriptsMemory, SealedPromptsTest(), AttestationTest({}))),
  Layer.provideMerge(EventLogMemory),
  Layer.provideMerge(RouterModes.pipe(Layer.provideMerge(RouterStrategiesLive))),
  Layer.provideMerge(CatalogueLive.pipe(Layer.provide(Plugins), Layer.provide(ProviderRegistryLive))),
  Layer.provideMerge(Layer.mergeAll(PricingLive, IdsTest)),
  Layer.provideMerge(testConfig())
)

const principal = (accountId: string) => ({ keyId: "key_test", accountId, scopes: ["chat" as const] })

layer(Pipeline)("chat pipeline on the Test layers", (it) => {
  it.effect("a call is reserved, served by the sandbox, settled and recorded", () =>
    Effect.gen(function*() {
      yield* openAccount({ id: "acct_pipe", balance: 1_000_000_000n })
      const chat = yield* ChatGateway
      const { completion, receipt } = yield* chat.complete(
        { model: "svc/pro", messages: [{ role: "user", content: "hello" }] },
        principal("acct_pipe")
      )
      expect(completion.model).toBe("svc/pro")
      expect(receipt).toMatchObject({ id: "rcpt_1", accountId: "acct_pipe", model: "svc/pro" })
      expect(receipt.balanceAfter).toBe(1_000_000_000n - receipt.cost.total)
      expect(yield* Effect.flatMap(Ledger, (ledger) => ledger.receipt("acct_pipe", "rcpt_1"))).toEqual(receipt)
      const types = (yield* Effect.flatMap(RecordedEvents, (events) => events.all)).map((event) => event.type)
      expect(types).toEqual(expect.arrayContaining(["payment.reserved", "payment.settled", "receipt.created"]))
    }))

  it.effect("an account that cannot cover the estimate is refused before any call", () =>
    Effect.gen(function*() {
      yield* openAccount({ id: "acct_poor", balance: 0n })
      const chat = yield* ChatGateway
      const refused = yield* Effect.flip(
        chat.complete({ model: "svc/pro", messages: [{ role: "user", content: "hello" }] }, principal("acct_poor"))
      )
      expect(refused._tag).toBe("InsufficientFunds")
    }))
})
