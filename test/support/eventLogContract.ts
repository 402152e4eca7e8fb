/**
 * The EventLog's contract (services/EventLog.ts) as one suite that every
 * implementation must pass: EventLogPg on a real database and EventLogMemory
 * (test/eventLogContract.test.ts), each read back through `RecordedEvents`.
 */
import { expect } from "@effect/vitest"
import { Effect, Schedule, TestServices } from "effect"
import { RecordedEvents } from "../../layers/events/EventLogMemory.ts"
import { EventLog } from "../../services/EventLog.ts"
import type { MoneyLayers } from "./moneyLayers.ts"
import { layer } from "./layer.ts"

const recorded = Effect.flatMap(RecordedEvents, (events) => events.all)

export const eventLogContract = (implementation: MoneyLayers) =>
  layer(implementation.layer, { timeout: "60 seconds" })(`EventLog contract: ${implementation.name}`, (it) => {
    it.effect("records each event once, as given, with an event id and a time", () =>
      Effect.gen(function*() {
        const log = yield* EventLog
        const data = { model: "svc/pro", attempts: [{ outcome: "ok", latency_ms: 3 }], fallback: false, note: null }
        yield* log.record({ type: "provider.route", accountId: "acct_el1", requestId: "req_1", receiptId: "rcpt_1", data })
        yield* log.record({ type: "privacy.rejected", accountId: "acct_el1", data: {} })
        const mine = (yield* recorded).filter((event) => event.accountId === "acct_el1")
        expect(mine.map(({ createdAt: _, id: __, ...event }) => event).sort((a, b) => a.type.localeCompare(b.type))).toEqual([
          { type: "privacy.rejected", accountId: "acct_el1", data: {} },
          { type: "provider.route", accountId: "acct_el1", requestId: "req_1", receiptId: "rcpt_1", data }
        ])
        for (const event of mine) {
          expect(event.id).toMatch(/^evt_/)
          expect(event.createdAt).toBeInstanceOf(Date)
        }
        expect(new Set(mine.map((event) => event.id)).size).toBe(2)
      }))

    it.effect("records events of no account", () =>
      Effect.gen(function*() {
        const log = yield* EventLog
        yield* log.record({ type: "key.revoked", accountId: null, data: { key_id: "key_el2" } })
        const found = (yield* recorded).filter((event) => event.data.key_id === "key_el2")
        expect(found.map(({ accountId, type }) => ({ accountId, type }))).toEqual([{ accountId: null, type: "key.revoked" }])
      }))
  
    it.effect("lists an account's events newest first, a page at a time, by type, category, receipt and time", () =>
      Effect.gen(function*() {
        const log = yield* EventLog
        const account = "acct_el3"
        const types = ["payment.reserved", "payment.settled", "receipt.created", "provider.route", "privacy.class_served"] as const
        for (const [index, type] of types.entries()) {
          yield* log.record({ type, accountId: account, receiptId: index % 2 === 0 ? "rcpt_el3" : undefined, data: { index } })
        }
        yield* log.record({ type: "payment.reserved", accountId: "acct_el4", data: {} })
        // Events are listed once every older transaction on the server has ended (docs/events.md), so
        // another test's open transaction may hold them back for a moment; later lists see them too.
        const all = yield* TestServices.provideLive(log.list({ accountId: account, limit: 100 }).pipe(
          Effect.filterOrFail((page) => page.items.length >= types.length, () => "held back"),
          Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 1000 }),
          Effect.orDie
        ))
        expect(all.next).toBeNull()
        expect(all.items.map((event) => event.data.index)).toEqual([4, 3, 2, 1, 0])
        const walked: Array<unknown> = []
        let after = undefined as (typeof all.items)[number]["position"] | undefined
        do {
          const page = yield* log.list({ accountId: account, limit: 2, after })
          expect(page.items.length).toBeLessThanOrEqual(2)
          walked.push(...page.items.map((event) => event.data.index))
          after = page.next ?? undefined
        } while (after !== undefined)
        expect(walked).toEqual([4, 3, 2, 1, 0])
        const indexes = (page: { readonly items: ReadonlyArray<{ readonly data: Record<string, unknown> }> }) =>
          page.items.map((event) => event.data.index)
        expect(indexes(yield* log.list({ accountId: account, limit: 100, type: { exact: "provider.route" } }))).toEqual([3])
        expect(indexes(yield* log.list({ accountId: account, limit: 100, type: { category: "payment" } }))).toEqual([1, 0])
        expect(indexes(yield* log.list({ accountId: account, limit: 100, receiptId: "rcpt_el3" }))).toEqual([4, 2, 0])
        expect((yield* log.list({ accountId: account, limit: 100, to: new Date(0) })).items).toEqual([])
        expect(indexes(yield* log.list({ accountId: account, limit: 100, from: new Date(0) }))).toEqual([4, 3, 2, 1, 0])
        expect((yield* log.list({ accountId: "acct_el5", limit: 100 })).items).toEqual([])
      }))
  })
