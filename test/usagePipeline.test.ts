/**
 * Upstream usage through the whole chat path on the memory layers (no server,
 * no database): a scripted upstream reports usage that cannot be right
 * (negative, past 2³¹, NaN, fractional), none at all, or more output than was
 * held. Every call gets exactly one receipt at the stated rule — an
 * impossible usage billed as the estimate held with `provider.usage_invalid`,
 * a missing one by our own count, an excess in full with `payment.overage` —
 * and the receipts add up to the balance drop.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { AdmissionLive } from "../layers/admission/AdmissionLive.ts"
import { RateLimitsMemory } from "../layers/admission/RateLimitStoreLive.ts"
import { BillingLive } from "../layers/billing/BillingLive.ts"
import { LedgerMemory } from "../layers/billing/LedgerMemory.ts"
import { MemoryBank, openAccount } from "../layers/billing/memoryBank.ts"
import { PricingLive } from "../layers/billing/PricingLive.ts"
import { SettlementJournalMemory } from "../layers/billing/SettlementJournalMemory.ts"
import { CatalogueFixed } from "../layers/catalogue/CatalogueFixed.ts"
import { CallRecorderLive } from "../layers/events/CallRecorderLive.ts"
import { EventLogMemory, RecordedEvents } from "../layers/events/EventLogMemory.ts"
import { ChatGatewayLive } from "../layers/gateway/ChatGatewayLive.ts"
import { HealthMemory } from "../layers/health/HealthMemory.ts"
import { IdsTest } from "../layers/platform/IdsTest.ts"
import { AttestationTest } from "../layers/privacy/AttestationTest.ts"
import { PrivacyPolicyLive } from "../layers/privacy/PrivacyPolicyLive.ts"
import { SealedPromptsTest } from "../layers/privacy/SealedPromptsTest.ts"
import { TranscriptsMemory } from "../layers/privacy/TranscriptsMemory.ts"
import { RoutePlannerLive } from "../layers/routing/RoutePlannerLive.ts"
import { RouterStrategiesLive } from "../layers/routing/RouterStrategiesLive.ts"
import { UpstreamLive } from "../layers/upstream/UpstreamLive.ts"
import { RouterModes } from "../plugins/router/index.ts"
import { ChatGateway } from "../services/ChatGateway.ts"
import type { Receipt } from "../services/Ledger.ts"
import { formatUsd } from "../services/Money.ts"
import { chatRequest, type Scripted, scriptedAdapter, testDeployment, testModel, usd } from "./support/pipeline.ts"
import { testConfig } from "./support/testConfig.ts"

const principal = (accountId: string) => ({ keyId: "key_1", accountId, scopes: ["chat" as const] })

/** The chat path over the memory layers, svc/a served by one scripted deployment. */
const pipeline = (script: ReadonlyArray<Scripted>) => {
  const model = testModel("svc/a", { context: 8000, pricing: { input: usd(1), output: usd(2) } })
  const deployment = testDeployment(model, "p/0", { adapter: scriptedAdapter(script).adapter })
  const stages = Layer.mergeAll(AdmissionLive, RoutePlannerLive).pipe(
    Layer.provideMerge(Layer.mergeAll(PrivacyPolicyLive, BillingLive, UpstreamLive, CallRecorderLive))
  )
  return ChatGatewayLive.pipe(
    Layer.provide(stages),
    Layer.provide(SettlementJournalMemory),
    Layer.provide(RouterModes),
    Layer.provideMerge(Layer.mergeAll(
      CatalogueFixed([{ model, deployments: [deployment] }]),
      HealthMemory,
      LedgerMemory,
      AttestationTest({}),
      SealedPromptsTest(),
      TranscriptsMemory,
      RouterStrategiesLive,
      RateLimitsMemory
    )),
    Layer.provideMerge(EventLogMemory),
    Layer.provideMerge(Layer.mergeAll(IdsTest, PricingLive)),
    Layer.provideMerge(testConfig())
  )
}

/** One call, JSON or streamed (read to its end): its receipt and the usage the caller was told. */
const call = (accountId: string, streamed: boolean, maxTokens: number) =>
  Effect.gen(function*() {
    const gateway = yield* ChatGateway
    const request = chatRequest({ max_tokens: maxTokens, ...(streamed ? { stream: true } : {}) })
    if (!streamed) {
      const { completion, receipt } = yield* Effect.scoped(gateway.complete(request, principal(accountId)))
      return { receiptId: receipt.id, told: completion.usage }
    }
    const receiptId = yield* Effect.scoped(
      Effect.flatMap(gateway.stream(request, principal(accountId)), (stream) => Effect.as(Stream.runDrain(stream.chunks), stream.receiptId))
    )
    return { receiptId, told: undefined }
  })

const receiptsOf = (ids: ReadonlyArray<string>) =>
  Effect.map(MemoryBank, (bank) => ids.map((id) => bank.receipts.get(id)).filter((r): r is Receipt => r !== undefined))

const eventsOf = (type: string) =>
  Effect.flatMap(RecordedEvents, (recorded) => recorded.all).pipe(Effect.map((all) => all.filter((event) => event.type === type)))

const bad: ReadonlyArray<{ readonly input: number; readonly output: number }> = [
  { input: -5, output: 10 },
  { input: 10, output: 2 ** 31 },
  { input: Number.NaN, output: 10 },
  { input: 10, output: 1.5 }
]

describe("upstream usage on the chat path", () => {
  it.effect("impossible usage is billed as the estimate held, one receipt each, JSON and streamed alike", () => {
    // Per round: a good call, the four bad ones, one with no usage at all.
    const round: ReadonlyArray<Scripted> = [
      { pieces: ["fine ", "answer"], usage: { input: 12, output: 4 } },
      ...bad.map((usage) => ({ pieces: ["odd ", "usage"], usage })),
      { pieces: ["no ", "usage ", "reported"] }
    ]
    return Effect.gen(function*() {
      const start = 1_000_000_000n
      yield* openAccount({ id: "acct_u", balance: start })
      const results = []
      for (const streamed of [false, true]) {
        for (let i = 0; i < round.length; i++) results.push(yield* call("acct_u", streamed, 100))
      }
      const receipts = yield* receiptsOf(results.map((result) => result.receiptId))
      expect(receipts).toHaveLength(12)
      // The estimate held: the counted input and the 100 output tokens asked for.
      const held = receipts[1]!.usage
      expect(held.outputTokens).toBe(100)
      for (const offset of [0, 6]) {
        expect(receipts[offset]!.usage).toEqual({ inputTokens: 12, outputTokens: 4 })
        for (let i = 1; i <= 4; i++) expect(receipts[offset + i]!.usage).toEqual(held)
        expect(receipts[offset + 5]!.usage.outputTokens).toBeGreaterThan(0)
        expect(receipts[offset + 5]!.usage.outputTokens).toBeLessThan(100)
      }
      // A JSON caller is told what was billed, never the impossible figures.
      expect(results[1]!.told).toEqual({
        prompt_tokens: held.inputTokens,
        completion_tokens: 100,
        total_tokens: held.inputTokens + 100
      })
      const invalid = yield* eventsOf("provider.usage_invalid")
      expect(invalid.map((event) => event.receiptId)).toEqual([1, 2, 3, 4, 7, 8, 9, 10].map((i) => receipts[i]!.id))
      expect(invalid.map((event) => event.data.reported_input_tokens)).toEqual(["-5", "10", "NaN", "10", "-5", "10", "NaN", "10"])
      const bank = yield* MemoryBank
      const account = bank.accounts.get("acct_u")!
      expect(account.reserved).toBe(0n)
      expect(start - account.balance).toBe(receipts.reduce((sum, receipt) => sum + receipt.cost.total, 0n))
    }).pipe(Effect.provide(pipeline([...round, ...round])))
  })

  it.effect("a streaming caller who asked for usage is told the usage billed, not the impossible figures", () =>
    Effect.gen(function*() {
      yield* openAccount({ id: "acct_t", balance: 1_000_000_000n })
      const gateway = yield* ChatGateway
      const request = chatRequest({ max_tokens: 100, stream: true, stream_options: { include_usage: true } })
      const { chunks, receiptId } = yield* Effect.scoped(
        Effect.flatMap(gateway.stream(request, principal("acct_t")), (stream) =>
          Effect.map(Stream.runCollect(stream.chunks), (chunks) => ({ chunks: [...chunks], receiptId: stream.receiptId })))
      )
      const [receipt] = yield* receiptsOf([receiptId])
      expect(receipt!.usage.outputTokens).toBe(100)
      expect(chunks.flatMap((chunk) => (chunk.usage ? [chunk.usage] : []))).toEqual([{
        prompt_tokens: receipt!.usage.inputTokens,
        completion_tokens: 100,
        total_tokens: receipt!.usage.inputTokens + 100
      }])
    }).pipe(Effect.provide(pipeline([{ pieces: ["odd"], usage: { input: -1, output: 3 } }]))))

  it.effect("more output than held is charged in full: the balance goes below zero by the excess, with payment.overage", () =>
    Effect.gen(function*() {
      const bank = yield* MemoryBank
      for (const [accountId, streamed] of [["acct_oj", false], ["acct_os", true]] as const) {
        // Enough to hold the input and the 100 output tokens asked for (about $0.00021), not what is reported.
        const start = 250_000n
        yield* openAccount({ id: accountId, balance: start })
        const { receiptId, told } = yield* call(accountId, streamed, 100)
        const [receipt] = yield* receiptsOf([receiptId])
        // 20 × $1 + 600 × $2 per million tokens, in full.
        expect(receipt!.usage).toEqual({ inputTokens: 20, outputTokens: 600 })
        expect(receipt!.cost.total).toBe(1_220_000n)
        if (!streamed) expect(told).toMatchObject({ prompt_tokens: 20, completion_tokens: 600 })
        const account = bank.accounts.get(accountId)!
        expect(start - account.balance).toBe(receipt!.cost.total)
        expect(account.balance).toBe(-970_000n)
        const overage = receipt!.cost.total - receipt!.estimated
        expect((yield* eventsOf("payment.overage")).filter((event) => event.receiptId === receiptId)).toMatchObject([{
          accountId,
          data: { held_usd: formatUsd(receipt!.estimated), charged_usd: "0.001220000", overage_usd: formatUsd(overage) }
        }])
        // Below zero by the excess only, and nothing more is admitted until a credit covers it.
        expect(-account.balance).toBeLessThanOrEqual(overage)
        expect((yield* Effect.flip(call(accountId, streamed, 100)))._tag).toBe("InsufficientFunds")
      }
    }).pipe(Effect.provide(pipeline([{ pieces: ["long ", "answer"], usage: { input: 20, output: 600 } }]))))
})
