/**
 * A settled call's events read from its receipt (migrations 0022 and 0023,
 * layers/events/EventLogPg.ts): `GET /v1/logs`'s pages list them among the
 * stored events in the one order of `event_log`, through every filter and
 * cursor, leave out a receipt written before the migration (its events were
 * stored) and follow the events' retention.
 */
import { expect } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer } from "effect"
import { Accounts } from "../services/Accounts.ts"
import { EventLog, type EventQuery, type StoredEvent } from "../services/EventLog.ts"
import { Ledger } from "../services/Ledger.ts"
import { layer } from "./support/layer.ts"
import { billFor, usd } from "./support/ledgerContract.ts"
import { pgLedger } from "./support/moneyLayers.ts"

const RETENTION_DAYS = 30

const Tested = pgLedger({ monitoring: { eventRetentionDays: RETENTION_DAYS } }).pipe(
  // Reservations are stamped by the ledger's clock: a real one, so its events are inside their retention.
  Layer.provide(Layer.setClock(Clock.make()))
)

interface LogRow {
  readonly id: string
  readonly type: string
  readonly receipt_id: string | null
  readonly created_at: Date
  readonly xid: string
  readonly seq: string
}

/** The account's events as `event_log` orders them: the one order every page must follow. */
const logOf = (accountId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<LogRow>`
      SELECT id, type, receipt_id, created_at, xid::text, seq::text FROM event_log
      WHERE account_id = ${accountId} ORDER BY event_log.xid DESC, event_log.seq DESC`).pipe(Effect.orDie)

/** Every page of a query, walked `limit` at a time. */
const walk = (query: Omit<EventQuery, "limit" | "after">, limit: number) =>
  Effect.gen(function*() {
    const log = yield* EventLog
    const seen: Array<StoredEvent> = []
    let page = yield* log.list({ ...query, limit })
    seen.push(...page.items)
    while (page.next !== null) {
      expect(page.items.length).toBe(limit)
      page = yield* log.list({ ...query, limit, after: page.next })
      seen.push(...page.items)
    }
    return seen
  })

/** Waits until the newest page lists what `event_log` holds (other suites' transactions hold the horizon back). */
const untilListed = (accountId: string) =>
  Effect.gen(function*() {
    const expected = (yield* logOf(accountId)).length
    const newestPage = Effect.flatMap(EventLog, (log) => log.list({ accountId, limit: 1000 }))
    let listed = (yield* newestPage).items
    for (let tries = 0; tries < 200 && listed.length !== expected; tries++) {
      yield* Effect.promise(() => new Promise((wake) => setTimeout(wake, 25)))
      listed = (yield* newestPage).items
    }
    if (listed.length !== expected) {
      throw new Error(`the events were never all listed: ${listed.length} of ${expected}: ${listed.map((e) => e.type).join(",")}`)
    }
  })

/** A call served by its first route: its routing and privacy events are kept in its receipt (migration 0023). */
const servedFirst = (total: string) => ({
  ...billFor(total),
  events: [
    { type: "provider.route" as const, data: { model: "svc/pro", attempt: 1 } },
    { type: "privacy.class_served" as const, data: { class: "standard_route" } }
  ]
})

/** A call that fell back once: all its call events are stored as rows. */
const fellBack = (total: string) => ({
  ...billFor(total),
  events: [
    { type: "provider.route" as const, data: { model: "svc/pro", attempt: 1 } },
    { type: "provider.fallback" as const, data: { from_model: "svc/pro", to_model: "svc/pro", attempt: 2 } },
    { type: "provider.route" as const, data: { model: "svc/pro", attempt: 2 } },
    { type: "privacy.class_served" as const, data: { class: "standard_route" } }
  ]
})

/**
 * An account with calls reserved by statement and (once it is busy) from a lease: two settled
 * alone (the first fell back, the second has an overage), then ten at once.
 */
const busyAccount = Effect.gen(function*() {
  const ledger = yield* Ledger
  const log = yield* EventLog
  const account = yield* Effect.flatMap(Accounts, (accounts) => accounts.create({ name: "derived", credit: usd("5") }))
  const reserve = (i: number) => ledger.reserve({ accountId: account.id, requestId: `req_${i}`, amount: usd("0.01") })
  const reservations = yield* Effect.forEach(Array.from({ length: 12 }, (_, i) => i), reserve)
  yield* log.record({ type: "provider.usage_invalid", accountId: account.id, data: { between: "settlements" } })
  yield* ledger.settle(reservations[0]!, fellBack("0.004"))
  yield* ledger.settle(reservations[1]!, billFor("0.02")) // above its hold: an overage, stored
  yield* Effect.forEach(reservations.slice(2), (reservation) => ledger.settle(reservation, servedFirst("0.003")), {
    concurrency: "unbounded"
  })
  yield* untilListed(account.id)
  return { account, reservations }
})

layer(Tested, { timeout: "60 seconds" })("settlement events read from receipts", (it) => {
  it.effect("pages list stored and derived events in event_log's order, at every page size, each once", () =>
    Effect.gen(function*() {
      const { account, reservations } = yield* busyAccount
      const whole = yield* logOf(account.id)
      const types = whole.map((event) => event.type)
      // 12 settled, one overage; the calls after the account got busy were held from a lease.
      expect(types.filter((type) => type === "payment.settled")).toHaveLength(12)
      expect(types.filter((type) => type === "receipt.created")).toHaveLength(12)
      expect(types.filter((type) => type === "payment.overage")).toHaveLength(1)
      expect(types.filter((type) => type === "payment.reserved")).toHaveLength(12)
      expect(types.filter((type) => type === "provider.route")).toHaveLength(13)
      expect(types.filter((type) => type === "privacy.class_served")).toHaveLength(11)
      const sql = yield* SqlClient.SqlClient
      const storedOf = (type: string) =>
        Effect.map(sql<{ n: number }>`
          SELECT count(*)::int AS n FROM events WHERE account_id = ${account.id} AND type = ${type}`, ([row]) => row!.n)
      expect(yield* storedOf("payment.reserved")).toBeLessThan(12) // some were derived: leased calls write no reservation event
      // Only the call that fell back stored its routing and privacy events.
      expect(yield* storedOf("provider.route")).toBe(2)
      expect(yield* storedOf("provider.fallback")).toBe(1)
      expect(yield* storedOf("privacy.class_served")).toBe(1)
      // A served call's events follow its receipt's, in the order they happened.
      const served = whole.filter((event) => event.receipt_id === reservations[5]!.id).map((event) => event.type).reverse()
      expect(served.slice(-4)).toEqual(["payment.settled", "receipt.created", "provider.route", "privacy.class_served"])
      expect(new Set(whole.map((event) => event.id)).size).toBe(whole.length)
      for (const limit of [1, 2, 3, 5, 1000]) {
        expect((yield* walk({ accountId: account.id }, limit)).map((event) => event.id)).toEqual(whole.map((event) => event.id))
      }
      // A receipt's page: its own events, stored and derived.
      const receipt = reservations[1]!.id
      expect((yield* walk({ accountId: account.id, receiptId: receipt }, 1)).map((event) => event.id))
        .toEqual(whole.filter((event) => event.receipt_id === receipt).map((event) => event.id))
    }))

  it.effect("filters by exact type, category and time, with cursors inside a receipt's events", () =>
    Effect.gen(function*() {
      const { account } = yield* busyAccount
      const whole = yield* logOf(account.id)
      const ids = (events: ReadonlyArray<{ readonly id: string }>) => events.map((event) => event.id)
      for (
        const exact of [
          "payment.reserved",
          "payment.settled",
          "receipt.created",
          "payment.overage",
          "provider.route",
          "provider.fallback",
          "privacy.class_served"
        ] as const
      ) {
        expect(ids(yield* walk({ accountId: account.id, type: { exact } }, 2))).toEqual(ids(whole.filter((event) => event.type === exact)))
      }
      for (const category of ["payment", "receipt", "provider", "privacy", "account"] as const) {
        expect(ids(yield* walk({ accountId: account.id, type: { category } }, 3)))
          .toEqual(ids(whole.filter((event) => event.type.startsWith(`${category}.`))))
      }
      const middle = whole[Math.floor(whole.length / 2)]!.created_at
      expect(ids(yield* walk({ accountId: account.id, from: middle }, 2))).toEqual(ids(whole.filter((event) => event.created_at >= middle)))
      expect(ids(yield* walk({ accountId: account.id, to: middle, type: { category: "payment" } }, 2)))
        .toEqual(ids(whole.filter((event) => event.created_at < middle && event.type.startsWith("payment."))))
    }))

  it.effect("a receipt with no event_seq (before the migration, or a previous version's) adds nothing; retention applies", () =>
    Effect.gen(function*() {
      const { account, reservations } = yield* busyAccount
      const sql = yield* SqlClient.SqlClient
      const before = (yield* logOf(account.id)).length
      // A process of the previous version, serving during a rollout, writes receipts with no event_seq.
      const [column] = yield* sql<{ column_default: string | null }>`
        SELECT column_default FROM information_schema.columns WHERE table_name = 'receipts' AND column_name = 'event_seq'`
      expect(column!.column_default).toBeNull()
      yield* sql`UPDATE receipts SET event_seq = NULL WHERE id = ${reservations[3]!.id}`
      const old = reservations[4]!.id
      yield* sql`
        UPDATE receipts SET settled_at = now() - make_interval(days => ${RETENTION_DAYS + 1}),
                            reserved_at = now() - make_interval(days => ${RETENTION_DAYS + 1})
        WHERE id = ${old}`
      const after = yield* logOf(account.id)
      expect(after.filter((event) => event.receipt_id === reservations[3]!.id && event.type === "receipt.created")).toEqual([])
      expect(after.length).toBeLessThan(before)
      const stored = new Set((yield* sql<{ id: string }>`SELECT id FROM events WHERE receipt_id = ${old}`).map((row) => row.id))
      const listed = yield* walk({ accountId: account.id }, 4)
      // The old receipt's derived events stay in the view (receipts are kept), but are not listed: past retention.
      expect(listed.map((event) => event.id))
        .toEqual(after.filter((event) => event.receipt_id !== old || stored.has(event.id)).map((event) => event.id))
      expect(after.filter((event) => event.receipt_id === old && !stored.has(event.id)).map((event) => event.type).sort())
        .toEqual(["payment.settled", "privacy.class_served", "provider.route", "receipt.created"])
    }))
})
