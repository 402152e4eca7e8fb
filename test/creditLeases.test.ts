/**
 * Credit leases (layers/billing/creditLeases.ts, leasedHolds.ts): a busy
 * account's calls are held from credit the process reserved ahead, with no
 * statement, and still end with the same rows as a call reserved on its own
 * (a reservation row, its events, a receipt); the lease goes back when the
 * account is idle; near the balance's end no lease is taken; a lease whose
 * process died is freed by the sweeper. The pool's own rules are tested
 * apart, with no database.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeCreditLeases } from "../layers/billing/creditLeases.ts"
import { decodeLine, encodeLine } from "../layers/billing/journalCodec.ts"
import type { Reservation } from "../services/Ledger.ts"
import { Ledger } from "../services/Ledger.ts"
import { parseUsd } from "../services/Money.ts"
import { isAnswered } from "../services/atOnce.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { heldForCalls, moneyViolations } from "./support/invariants.ts"
import { billFor } from "./support/ledgerContract.ts"

const usd = (text: string) => parseUsd(text).pipe((option) => option._tag === "Some" ? option.value : 0n)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("the lease pool", () => {
  let n = 0
  const pool = () => makeCreditLeases(() => `lse_${++n}`)

  it("leases to a busy account only, at most a sixteenth of what it had available and 1,024 calls' worth", () => {
    const leases = pool()
    for (let i = 1; i < 8; i++) expect(leases.saw("acct", 10n, 1_000_000n)).toBeUndefined()
    const take = leases.saw("acct", 10n, 1_000_000n)!
    expect(take.amount).toBe(10240n)
    leases.took(take.lease, take.amount, 1_000_000n - 10240n)
    expect(leases.claim("acct", 10n, "rcpt_0")?.id).toBe(take.lease.id)
    expect(take.lease.left).toBe(10230n)
    // It asks for half the share the database grants (a sixteenth): a 32nd of 3,200 is 100, ten calls' worth.
    const small = pool()
    for (let i = 1; i < 8; i++) small.saw("a", 10n, 3_200n)
    expect(small.saw("a", 10n, 3_200n)!.amount).toBe(100n)
    // Under four calls' worth is not worth a lease.
    const short = pool()
    for (let i = 1; i < 8; i++) short.saw("a", 10n, 1_200n)
    expect(short.saw("a", 10n, 1_200n)).toBeUndefined()
  })

  it("holds from the lease only what it has left, refills it at half, and a release gives back", () => {
    const leases = pool()
    for (let i = 1; i < 8; i++) leases.saw("acct", 10n, 1_000_000n)
    const take = leases.saw("acct", 10n, 1_000_000n)!
    leases.took(take.lease, take.amount, 999_000n)
    const claimed = Array.from({ length: 512 }, (_, i) => leases.claim("acct", 10n, `rcpt_${i}`)!)
    expect(take.lease.left).toBe(5120n)
    expect(leases.refill(claimed[0]!)).toBeUndefined() // half left: no take yet
    leases.claim("acct", 10n, "rcpt_512")
    expect(take.lease.left).toBe(5110n)
    expect(take.lease.open.size).toBe(513)
    const refill = leases.refill(claimed[0]!)!
    expect(refill.amount).toBe(5130n)
    expect(leases.refill(claimed[0]!)).toBeUndefined() // one take at a time
    leases.took(refill.lease, 0n, 100n) // refused: the account ran low meanwhile
    // What covers says is what a claim would do, without claiming.
    expect(leases.covers("acct", 5110n)).toBe(true)
    expect(leases.covers("acct", 5111n)).toBe(false)
    expect(take.lease.left).toBe(5110n)
    expect(leases.covers("other", 1n)).toBe(false)
    expect(leases.claim("acct", 5111n, "rcpt_513")).toBeUndefined()
    leases.ended(take.lease.id, "rcpt_0", 10n) // released: its credit is back
    leases.ended(take.lease.id, "rcpt_1", 0n) // settled: its credit left with the settlement
    expect(take.lease.left).toBe(5120n)
    expect(take.lease.open.size).toBe(511)
    // A call ends once: settled again (a journal's replay), or released after, it changes nothing.
    leases.ended(take.lease.id, "rcpt_0", 10n)
    leases.ended(take.lease.id, "rcpt_1", 0n)
    leases.ended(take.lease.id, "rcpt_513", 10n) // never held from it
    expect(take.lease.left).toBe(5120n)
    expect(take.lease.open.size).toBe(511)
  })

  it("gives back a lease idle for a sweep with no call open, or closing once its calls end", () => {
    const leases = pool()
    for (let i = 1; i < 8; i++) leases.saw("a", 10n, 1_000_000n)
    const a = leases.saw("a", 10n, 1_000_000n)!
    leases.took(a.lease, a.amount, 999_000n)
    leases.claim("a", 10n, "rcpt_a")
    expect(leases.sweep()).toEqual([]) // used since the last sweep, and a call is open
    expect(leases.sweep()).toEqual([]) // idle, but a call is open
    leases.ended(a.lease.id, "rcpt_a", 0n)
    expect(leases.sweep()).toEqual([a.lease])
    expect(leases.claim("a", 10n, "rcpt_a2")).toBeUndefined()

    for (let i = 1; i < 8; i++) leases.saw("b", 10n, 1_000_000n)
    const b = leases.saw("b", 10n, 1_000_000n)!
    leases.took(b.lease, b.amount, 999_000n)
    leases.claim("b", 10n, "rcpt_b")
    leases.refused("b")
    expect(leases.claim("b", 10n, "rcpt_b2")).toBeUndefined()
    expect(leases.sweep()).toEqual([])
    leases.ended(b.lease.id, "rcpt_b", 10n)
    expect(leases.sweep()).toEqual([b.lease])
  })

  it("forgets a lease the database no longer has, and one never granted is not given back", () => {
    const leases = pool()
    for (let i = 1; i < 8; i++) leases.saw("a", 10n, 1_000_000n)
    const a = leases.saw("a", 10n, 1_000_000n)!
    leases.took(a.lease, a.amount, 999_000n)
    for (let i = 1; i < 8; i++) leases.saw("b", 10n, 1_000_000n)
    const b = leases.saw("b", 10n, 1_000_000n)!
    leases.took(b.lease, 0n, 10n)
    expect(leases.ids()).toEqual([a.lease.id])
    leases.keepOnly(new Set())
    expect(leases.claim("a", 10n, "rcpt_a")).toBeUndefined()
    expect(leases.all()).toEqual([])
  })

  it("gives back a lease whose take's answer was lost, as one that may have a row, and holds nothing from it", () => {
    const leases = pool()
    for (let i = 1; i < 8; i++) leases.saw("a", 10n, 1_000_000n)
    const a = leases.saw("a", 10n, 1_000_000n)!
    leases.lost(a.lease)
    expect(leases.claim("a", 10n, "rcpt_a")).toBeUndefined()
    expect(leases.ids()).toEqual([a.lease.id])
    expect(leases.sweep()).toEqual([]) // taken from in this sweep
    expect(leases.sweep()).toEqual([a.lease])
  })
})

describe("credit leases on the database", () => {
  let gateway: TestGateway
  beforeAll(async () => {
    gateway = await startGateway()
  })
  afterAll(() => gateway?.close())

  const reserve = (accountId: string, i: number, amount = "0.01") =>
    Effect.flatMap(Ledger, (ledger) => ledger.reserve({ accountId, requestId: `req_${i}`, amount: usd(amount) }))
  const leaseRows = (accountId: string) =>
    gateway.query<{ amount: string }>("SELECT amount_usd::text AS amount FROM credit_leases WHERE account_id = $1", [accountId])

  /** Reserves one by one until a reservation comes from a lease; all of them, in order. */
  const untilLeased = async (accountId: string) => {
    const made: Array<Reservation> = []
    for (let i = 0; i < 40 && made.at(-1)?.leaseId === undefined; i++) {
      made.push(await gateway.run(reserve(accountId, i)))
      if (made.length >= 8) await sleep(60) // the take lingers for the account's next turn
    }
    return made
  }

  it("holds a busy account's calls from a lease, each still ending with its reservation row, events and receipt", async () => {
    const account = await gateway.account({ credit: "400" })
    const made = await untilLeased(account.id)
    const leased = made.at(-1)!
    expect(leased.leaseId).toBeDefined()
    expect(made.filter((reservation) => reservation.leaseId === undefined).length).toBeGreaterThanOrEqual(8)
    // 1,024 calls' worth of 0.01 (a 32nd of ~400 is more); the call held from it is still in it.
    expect(await leaseRows(account.id)).toEqual([{ amount: "10.240000000" }])
    // No row for the leased call yet: the lease holds its credit.
    expect(await gateway.query("SELECT id FROM reservations WHERE id = $1", [leased.id])).toEqual([])

    await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.forEach(made, (reservation) => ledger.settle(reservation, billFor("0.004")), { discard: true })))
    const [row] = await gateway.query<{ status: string; amount: string }>(
      "SELECT status, amount_usd::text AS amount FROM reservations WHERE id = $1",
      [leased.id]
    )
    expect(row).toEqual({ status: "settled", amount: "0.010000000" })
    const events = await gateway.query<{ type: string }>(
      "SELECT type FROM event_log WHERE receipt_id = $1 ORDER BY created_at, id",
      [leased.id]
    )
    // Reserved first (at the call's start); the settlement's two share one time.
    expect(events[0]!.type).toBe("payment.reserved")
    expect(events.map((event) => event.type).sort()).toEqual(["payment.reserved", "payment.settled", "provider.route", "receipt.created"])
    // The settled call's credit left the lease; the rest stays leased until the account is idle.
    expect(await leaseRows(account.id)).toEqual([{ amount: "10.230000000" }])
    expect(await heldForCalls(gateway.query, account.id)).toBe("0.000000000")
    const [balance] = await gateway.query<{ balance: string }>("SELECT balance_usd::text AS balance FROM accounts WHERE id = $1", [account.id])
    expect(usd(balance!.balance)).toBe(usd("400") - usd("0.004") * BigInt(made.length))
    expect(await moneyViolations(gateway.query)).toEqual([])

    // Idle for a sweep (a second, or two): the lease goes back.
    for (let i = 0; i < 40 && (await leaseRows(account.id)).length > 0; i++) await sleep(100)
    expect(await leaseRows(account.id)).toEqual([])
    const [after] = await gateway.query<{ reserved: string }>("SELECT reserved_usd::text AS reserved FROM accounts WHERE id = $1", [account.id])
    expect(after!.reserved).toBe("0.000000000")
    expect(await moneyViolations(gateway.query)).toEqual([])
  })

  it("releases a call held from a lease: its rows are written, its credit goes back to the lease, twice is harmless", async () => {
    const account = await gateway.account({ credit: "100" })
    const made = await untilLeased(account.id)
    const leased = made.at(-1)!
    const leasedBefore = await leaseRows(account.id)
    await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.zipRight(ledger.release(leased), ledger.release(leased))))
    const [row] = await gateway.query<{ status: string }>("SELECT status FROM reservations WHERE id = $1", [leased.id])
    expect(row).toEqual({ status: "released" })
    const events = await gateway.query<{ type: string; reason: string | null }>(
      "SELECT type, data->>'reason' AS reason FROM event_log WHERE receipt_id = $1 ORDER BY created_at, id",
      [leased.id]
    )
    expect(events).toEqual([{ type: "payment.reserved", reason: null }, { type: "payment.released", reason: "call_failed" }])
    expect(await leaseRows(account.id)).toEqual(leasedBefore)
    // The credit is back in the lease: the next call is held from it, when called (services/atOnce.ts: no step).
    const next = await gateway.run(Effect.flatMap(Ledger, (ledger) => {
      const reserving = ledger.reserve({ accountId: account.id, requestId: "req_99", amount: usd("0.01") })
      expect(isAnswered(reserving)).toBe(true)
      return reserving
    }))
    expect(next.leaseId).toBe(leased.leaseId)
    await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.forEach([...made.slice(0, -1), next], (reservation) => ledger.release(reservation), { discard: true })))
    expect(await heldForCalls(gateway.query, account.id)).toBe("0.000000000")
    expect(await moneyViolations(gateway.query)).toEqual([])
  })

  it("ends a call held from a lease once, however often it is settled or released: the lease still goes back", async () => {
    const account = await gateway.account({ credit: "100" })
    const made = await untilLeased(account.id)
    const leased = made.at(-1)!
    await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.forEach(made, (reservation) => ledger.settle(reservation, billFor("0.004")), { discard: true })))
    // A settlement kept in the journal is settled again when the database is back; a late release changes nothing.
    await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.zipRight(Effect.exit(ledger.settle(leased, billFor("0.004"))), ledger.release(leased))))
    const receipts = await gateway.query("SELECT id FROM receipts WHERE account_id = $1", [account.id])
    expect(receipts).toHaveLength(made.length)
    // Idle for a sweep (a second, or two): the lease goes back, as it would had the call ended once.
    for (let i = 0; i < 40 && (await leaseRows(account.id)).length > 0; i++) await sleep(100)
    expect(await leaseRows(account.id)).toEqual([])
    expect(await heldForCalls(gateway.query, account.id)).toBe("0.000000000")
    expect(await moneyViolations(gateway.query)).toEqual([])
  })

  it("takes no lease near the balance's end: every call reserves on its own, and the last ones are refused exactly", async () => {
    // 20 calls' worth: a 32nd of it is under four calls' worth.
    const account = await gateway.account({ credit: "0.2" })
    const results = []
    for (let i = 0; i < 25; i++) results.push(await gateway.run(Effect.either(reserve(account.id, i))))
    expect(results.map((result) => result._tag)).toEqual([...Array(20).fill("Right"), ...Array(5).fill("Left")])
    expect(results.every((result) => result._tag === "Left" || result.right.leaseId === undefined)).toBe(true)
    expect(await leaseRows(account.id)).toEqual([])
  })

  it("frees a lease whose process stopped renewing it, with the sweep", async () => {
    const account = await gateway.account({ credit: "1" })
    await gateway.query(
      `WITH lease AS (
         INSERT INTO credit_leases (id, account_id, amount_usd, expires_at)
         VALUES ('lse_stranded', $1, 0.25, now() - interval '1 second')
       )
       UPDATE accounts SET reserved_usd = reserved_usd + 0.25 WHERE id = $1`,
      [account.id]
    )
    expect(await gateway.run(Effect.flatMap(Ledger, (ledger) => ledger.sweepExpired()))).toBeGreaterThanOrEqual(1)
    expect(await leaseRows(account.id)).toEqual([])
    const [after] = await gateway.query<{ reserved: string }>("SELECT reserved_usd::text AS reserved FROM accounts WHERE id = $1", [account.id])
    expect(after!.reserved).toBe("0.000000000")
  })

  it("settles a call held from a lease that was swept meanwhile as one swept: what is available held again, the rest an overage", async () => {
    const account = await gateway.account({ credit: "100" })
    const made = await untilLeased(account.id)
    const leased = made.at(-1)!
    // The process stalled past the lease's time, and another process's sweeper freed it.
    await gateway.query("UPDATE credit_leases SET expires_at = now() - interval '1 second' WHERE account_id = $1", [account.id])
    await gateway.run(Effect.flatMap(Ledger, (ledger) => ledger.sweepExpired()))
    // The leased call cost more than the account has left.
    await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.forEach(made, (reservation) => ledger.settle(reservation, billFor(reservation === leased ? "150" : "0.004")), { discard: true })))
    const [row] = await gateway.query<{ status: string }>("SELECT status FROM reservations WHERE id = $1", [leased.id])
    expect(row).toEqual({ status: "settled" })
    const events = await gateway.query<{ type: string }>("SELECT type FROM event_log WHERE receipt_id = $1", [leased.id])
    expect(events.map((event) => event.type).sort()).toEqual([
      "payment.overage",
      "payment.reserved",
      "payment.settled",
      "provider.route",
      "receipt.created"
    ])
    const [balance] = await gateway.query<{ balance: string }>("SELECT balance_usd::text AS balance FROM accounts WHERE id = $1", [account.id])
    expect(usd(balance!.balance)).toBe(usd("100") - usd("150") - usd("0.004") * BigInt(made.length - 1))
    // Held again was all that was left, so the account is below zero by exactly its overage.
    const [overage] = await gateway.query<{ amount: string }>(
      "SELECT data->>'overage_usd' AS amount FROM events WHERE receipt_id = $1 AND type = 'payment.overage'",
      [leased.id]
    )
    expect(usd(overage!.amount)).toBe(-usd(balance!.balance))
    expect(await heldForCalls(gateway.query, account.id)).toBe("0.000000000")
    expect(await moneyViolations(gateway.query)).toEqual([])
    // Settled twice (a journal replayed again): refused, nothing charged twice.
    const again = await gateway.run(Effect.exit(Effect.flatMap(Ledger, (ledger) => ledger.settle(leased, billFor("150")))))
    expect(again._tag).toBe("Failure")
    expect(await moneyViolations(gateway.query)).toEqual([])
  })

  it("keeps a call's lease in a journal line", () => {
    const reservation: Reservation = {
      id: "rcpt_1",
      accountId: "acct_1",
      requestId: "req_1",
      amount: 10n,
      reservedAt: new Date("2026-11-26T00:00:00Z"),
      leaseId: "lse_1"
    }
    expect(decodeLine(encodeLine({ reservation, bill: billFor("0.004") }))?.reservation).toEqual(reservation)
  })
})
