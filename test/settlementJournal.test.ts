/**
 * The settlement journal on its files over the in-memory ledger (no
 * database, so these run on PGlite runs too): a settlement the ledger cannot
 * write is kept on disk, the call still gets a (pending) receipt, the hold is
 * not swept while it is kept, and a replay — later, or after a restart —
 * writes it exactly once. Also the database status: one log line per change.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlError } from "@effect/sql/SqlError"
import { expect } from "@effect/vitest"
import { Cause, Effect, Layer, Logger } from "effect"
import { describe, it as vitest } from "vitest"
import { BillingLive } from "../layers/billing/BillingLive.ts"
import { decodeLine, encodeLine } from "../layers/billing/journalCodec.ts"
import { openJournalFiles } from "../layers/billing/journalFiles.ts"
import { PricingLive } from "../layers/billing/PricingLive.ts"
import { makeSettlementJournal } from "../layers/billing/SettlementJournalFile.ts"
import { IdsLive } from "../layers/platform/IdsLive.ts"
import { makeDatabaseStatus } from "../layers/storage/DatabaseStatusLive.ts"
import { Accounts } from "../services/Accounts.ts"
import { Billing, isPending } from "../services/Billing.ts"
import { DatabaseStatus, isDatabaseOutage } from "../services/DatabaseStatus.ts"
import { Ledger, settlingAtOnce } from "../services/Ledger.ts"
import { SettlementJournal } from "../services/SettlementJournal.ts"
import { billFor } from "./support/ledgerContract.ts"
import { memoryMoney } from "./support/moneyLayers.ts"
import { testConfig } from "./support/testConfig.ts"
import { servedCall, usd } from "./support/pipeline.ts"
import { layer } from "./support/layer.ts"

/** What the driver throws when the server is gone, wrapped as @effect/sql does. */
const refused = () =>
  new SqlError({
    message: "Failed to acquire connection",
    cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" })
  })

/** The in-memory ledger behind a switch: while `down`, settling and reading receipts fail as in an outage. */
const switchable = Effect.map(Ledger, (real) => {
  const state = { down: false, settles: 0 }
  const settle: Ledger["Type"]["settle"] = (reservation, bill) =>
    Effect.suspend(() => state.down ? Effect.die(refused()) : Effect.tap(real.settle(reservation, bill), () => void state.settles++))
  const ledger: Ledger["Type"] = {
    ...real,
    settle,
    settleQueued: settlingAtOnce(settle),
    receipt: (accountId, id) => Effect.suspend(() => state.down ? Effect.die(refused()) : real.receipt(accountId, id))
  }
  return { state, ledger }
})

const journalDir = () => mkdtempSync(join(tmpdir(), "svc-journal-"))

/** A journal on `dir` over `ledger`, for the current scope (a "process life"). */
const openJournal = (dir: string, ledger: Ledger["Type"]) =>
  Effect.gen(function*() {
    const status = yield* makeDatabaseStatus(Effect.void, { probeIntervalMs: 60_000, retryAfterSeconds: 5 })
    const files = yield* openJournalFiles(dir)
    const journal = yield* makeSettlementJournal(files).pipe(
      Effect.provideService(Ledger, ledger),
      Effect.provideService(DatabaseStatus, status)
    )
    return { journal, status, files }
  })

const linesIn = (dir: string) =>
  readdirSync(dir).flatMap((name) => readFileSync(join(dir, name), "utf8").split("\n").filter((line) => line !== ""))

const newAccount = (credit: string) =>
  Effect.flatMap(Accounts, (accounts) => accounts.create({ name: "journal", credit: usd(Number(credit)) }))

const balanceOf = (id: string) => Effect.flatMap(Accounts, (accounts) => Effect.orDie(accounts.get(id)))

describe("journal lines", () => {
  vitest("keep bigint money exactly, as strings, and refuse a torn line", () => {
    const reservation = { id: "rcpt_1", accountId: "acct_1", requestId: "req_1", amount: 123456789012345678901234567n, reservedAt: new Date("2026-01-02T03:04:05.678Z") }
    const bill = { ...billFor("0.000000007", "0.000000003"), price: { input: 1n, output: undefined } }
    const line = encodeLine({ reservation, bill })
    expect(line.endsWith("\n")).toBe(true)
    expect(line).toContain(`"amount":"123456789012345678901234567"`)
    expect(decodeLine(line)).toEqual({ reservation, bill })
    expect(decodeLine(line.slice(0, 40))).toBeUndefined()
  })

  vitest("keep a run's line items with their money exact", () => {
    const reservation = { id: "rcpt_2", accountId: "acct_1", requestId: "req_2", amount: 10n, reservedAt: new Date("2026-01-02T03:04:05.678Z") }
    const cost = (total: bigint) => ({ upstream: 1n, margin: total - 1n, total })
    const bill = {
      ...billFor("0.000000007", "0.000000003"),
      lineItems: [
        { step: "query_embedding" as const, model: "svc/embed", usage: { inputTokens: 3, outputTokens: 0 }, cost: cost(2n) },
        { step: "generation" as const, model: "svc/swift", usage: { inputTokens: 30, outputTokens: 4 }, cost: cost(98765432109876543210n) }
      ]
    }
    expect(decodeLine(encodeLine({ reservation, bill }))).toEqual({ reservation, bill })
  })
})

layer(memoryMoney.layer)("settlement journal over the in-memory ledger", (it) => {
  it.scoped("a settlement kept during an outage is written once when the ledger is back; keeping it twice keeps it once", () =>
    Effect.gen(function*() {
      const dir = journalDir()
      const { ledger, state } = yield* switchable
      const { journal } = yield* openJournal(dir, ledger)
      const account = yield* newAccount("1")
      const reservation = yield* ledger.reserve({ accountId: account.id, requestId: "req_j1", amount: usd(0.5) })
      const bill = billFor("0.2", "0.1")

      state.down = true
      yield* journal.keep({ reservation, bill })
      yield* journal.keep({ reservation, bill })
      expect(linesIn(dir)).toHaveLength(1)
      expect(yield* journal.replay).toEqual({ settled: 0, pending: 1 })
      expect(yield* journal.pending).toEqual([reservation.id])

      state.down = false
      expect(yield* journal.replay).toEqual({ settled: 1, pending: 0 })
      expect(yield* journal.replay).toEqual({ settled: 0, pending: 0 })
      expect(state.settles).toBe(1)
      expect(linesIn(dir)).toEqual([])
      expect((yield* ledger.receipt(account.id, reservation.id)).cost.total).toBe(usd(0.2))
      expect(yield* balanceOf(account.id)).toMatchObject({ balance: usd(0.8), reserved: 0n })
      rmSync(dir, { recursive: true, force: true })
    }))

  it.scoped("a settlement that reached the ledger after all is found by its receipt and not charged again", () =>
    Effect.gen(function*() {
      const dir = journalDir()
      const { ledger, state } = yield* switchable
      const { journal } = yield* openJournal(dir, ledger)
      const account = yield* newAccount("1")
      const reservation = yield* ledger.reserve({ accountId: account.id, requestId: "req_j2", amount: usd(0.5) })
      // The write committed, but its answer was lost on the way back: the call kept it anyway.
      yield* ledger.settle(reservation, billFor("0.3"))
      yield* journal.keep({ reservation, bill: billFor("0.3") })
      expect(yield* journal.replay).toEqual({ settled: 1, pending: 0 })
      expect(state.settles).toBe(1)
      expect(yield* balanceOf(account.id)).toMatchObject({ balance: usd(0.7), reserved: 0n })
      rmSync(dir, { recursive: true, force: true })
    }))

  it.scoped("after a crash the next start adopts the journal (a torn last line skipped) and replays it", () =>
    Effect.gen(function*() {
      const dir = journalDir()
      const { ledger, state } = yield* switchable
      const account = yield* newAccount("1")
      const first = yield* ledger.reserve({ accountId: account.id, requestId: "req_j3", amount: usd(0.5) })
      const second = yield* ledger.reserve({ accountId: account.id, requestId: "req_j4", amount: usd(0.25) })
      state.down = true
      const left = yield* Effect.scoped(Effect.gen(function*() {
        const { files, journal } = yield* openJournal(dir, ledger)
        yield* journal.keep({ reservation: first, bill: billFor("0.1") })
        // Usage above the hold: charged what it cost (an overage), as the ledger would.
        yield* journal.keep({ reservation: second, bill: billFor("0.4") })
        return files.path
      }))
      // The process died mid-write of a third line.
      writeFileSync(left, readFileSync(left, "utf8") + `{"v":1,"reservation":{"id":"rcpt_torn"`)
      state.down = false

      const { journal } = yield* openJournal(dir, ledger)
      expect(yield* journal.replay).toEqual({ settled: 2, pending: 0 })
      expect(state.settles).toBe(2)
      expect(yield* balanceOf(account.id)).toMatchObject({ balance: usd(1) - usd(0.1) - usd(0.4), reserved: 0n })
      expect(linesIn(dir)).toEqual([])
      rmSync(dir, { recursive: true, force: true })
    }))

  it.scoped("Billing answers a pending receipt when the ledger is down; the hold outlives its lease unswept and is billed once", () =>
    Effect.gen(function*() {
      const dir = journalDir()
      const { ledger, state } = yield* switchable
      const { journal, status } = yield* openJournal(dir, ledger)
      const billing = yield* Effect.provide(
        Billing,
        BillingLive.pipe(Layer.provide(Layer.mergeAll(
          Layer.succeed(Ledger, ledger),
          Layer.succeed(SettlementJournal, journal),
          Layer.succeed(DatabaseStatus, status),
          IdsLive,
          PricingLive,
          testConfig()
        )))
      )
      const account = yield* newAccount("1")
      const principal = { keyId: "key_j", accountId: account.id, scopes: ["chat" as const] }
      const served = servedCall()
      const settlement = yield* billing.withHold(principal, usd(0.5), (hold) =>
        Effect.zipRight(Effect.sync(() => void (state.down = true)), billing.settle(hold, served)))
      // The database was not known to be away when the call ended: its settlement was queued (the
      // answer has its amounts), and went to the journal when the ledger refused it.
      expect(isPending(settlement)).toBe(false)
      // 1000 × $3/M + 500 × $6/M
      expect(settlement.cost.total).toBe(usd(0.006))
      yield* billing.settled
      expect(status.isUp()).toBe(false)
      expect(yield* journal.pending).toEqual([settlement.id])
      // Known to be away now: the next call's settlement goes to the journal at once, and its answer says so.
      const second = yield* billing.withHold(principal, usd(0.5), (hold) => billing.settle(hold, served))
      expect(isPending(second)).toBe(true)
      expect(yield* journal.pending).toEqual([settlement.id, second.id])

      state.down = false
      yield* memoryMoney.passLease
      expect(yield* ledger.sweepExpired(yield* journal.pending)).toBe(0)
      expect(yield* journal.replay).toEqual({ settled: 2, pending: 0 })
      expect(yield* balanceOf(account.id)).toMatchObject({ balance: usd(1) - usd(0.012), reserved: 0n })
      expect((yield* ledger.receipt(account.id, settlement.id)).cost.total).toBe(usd(0.006))
      rmSync(dir, { recursive: true, force: true })
    }))
})

describe("database status", () => {
  vitest("an outage is logged once however often it is met, and its end once; other failures are not outages", async () => {
    const lines: Array<string> = []
    const logger = Logger.make(({ message }) => void lines.push(String(Array.isArray(message) ? message[0] : message)))
    let answers = false
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const status = yield* makeDatabaseStatus(Effect.suspend(() => answers ? Effect.void : Effect.fail("down")), {
        probeIntervalMs: 5,
        retryAfterSeconds: 7
      })
      for (let i = 0; i < 50; i++) expect(yield* status.observe(Cause.die(refused()))).toBe(true)
      expect(yield* status.observe(Cause.die(new SqlError({ message: "x", cause: Object.assign(new Error("syntax"), { code: "42601" }) })))).toBe(false)
      expect(status.unavailable().retryAfterSeconds).toBe(7)
      answers = true
      while (!status.isUp()) yield* Effect.sleep("5 millis")
    })).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger))))
    expect(lines).toEqual(["database unreachable: connect ECONNREFUSED 127.0.0.1:1", "database back"])
  })

  vitest("knows the driver's words for an outage", () => {
    const outage = (error: unknown) => isDatabaseOutage(Cause.die(new SqlError({ message: "Failed", cause: error })))
    expect(outage(new Error("Connection terminated unexpectedly"))).toBe(true)
    expect(outage(new Error("timeout exceeded when trying to connect"))).toBe(true)
    expect(outage(new Error("Query read timeout"))).toBe(true)
    expect(outage(Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }))).toBe(true)
    expect(outage(Object.assign(new Error("cannot execute UPDATE in a read-only transaction"), { code: "25006" }))).toBe(true)
    expect(outage(Object.assign(new Error("duplicate key"), { code: "23505" }))).toBe(false)
    // Our statement_timeout ran out: the server is frozen. A statement cancelled because its request
    // went away is no outage (the fuzz suite once saw every request answered 503 after one hang-up).
    expect(outage(Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014" }))).toBe(true)
    expect(outage(Object.assign(new Error("canceling statement due to user request"), { code: "57014" }))).toBe(false)
  })
})
