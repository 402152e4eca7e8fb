/**
 * The ledger's group commit on the real database: calls that reach one account
 * together are reserved and settled in shared statements, and still admitted
 * and charged exactly as if they came one by one. A turn with settlements and
 * reservations both is one statement (one transaction), and its reservations
 * are admitted from what its settlements freed.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Bill, Reservation } from "../services/Ledger.ts"
import { Ledger } from "../services/Ledger.ts"
import { formatUsd, parseUsd } from "../services/Money.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { moneyViolations } from "./support/invariants.ts"

let gateway: TestGateway
beforeAll(async () => {
  gateway = await startGateway()
})
afterAll(() => gateway?.close())

const usd = (text: string) => parseUsd(text).pipe((option) => option._tag === "Some" ? option.value : 0n)

const billFor = (total: string, upstream: string): Bill => ({
  endpoint: "/v1/chat/completions",
  model: "svc/pro",
  tier: "pro",
  privacyClass: "standard_route",
  usage: { inputTokens: 10, outputTokens: 10 },
  price: { input: usd("1"), output: usd("2") },
  cost: { upstream: usd(upstream), margin: usd(total) - usd(upstream), total: usd(total) },
  attempts: [{ model: "svc/pro", outcome: "ok", latencyMs: 1 }],
  providerId: "sandbox"
})

const reserveAll = (accountId: string, amounts: ReadonlyArray<string>) =>
  Effect.flatMap(Ledger, (ledger) =>
    Effect.all(
      amounts.map((amount, i) => Effect.either(ledger.reserve({ accountId, requestId: `req_${i}`, amount: usd(amount) }))),
      { concurrency: "unbounded" }
    ))

describe("ledger batches", () => {
  it("admits concurrent reservations in arrival order while the balance covers them", async () => {
    const account = await gateway.account({ credit: "1" })
    // The first runs alone; the other four share one statement: 0.6 no longer fits, the small ones do.
    const results = await gateway.run(reserveAll(account.id, ["0.6", "0.6", "0.3", "0.1", "0.05"]))
    expect(results.map((result) => result._tag)).toEqual(["Right", "Left", "Right", "Right", "Left"])
    const [row] = await gateway.query<{ reserved: string; open: number }>(
      `SELECT reserved_usd::text AS reserved, (SELECT count(*)::int FROM reservations WHERE account_id = $1 AND status = 'open') AS open
       FROM accounts WHERE id = $1`,
      [account.id]
    )
    expect(row).toEqual({ reserved: "1.000000000", open: 3 })
    const events = await gateway.query<{ type: string; amount: string }>(
      `SELECT type, coalesce(data->>'amount_usd', data->>'estimated_usd') AS amount FROM event_log
       WHERE account_id = $1 AND type IN ('payment.reserved', 'payment.insufficient_funds') ORDER BY type, amount`,
      [account.id]
    )
    expect(events).toEqual([
      { type: "payment.insufficient_funds", amount: "0.050000000" },
      { type: "payment.insufficient_funds", amount: "0.600000000" },
      { type: "payment.reserved", amount: "0.100000000" },
      { type: "payment.reserved", amount: "0.300000000" },
      { type: "payment.reserved", amount: "0.600000000" }
    ])
    // Free them, so the invariants below see a quiet account.
    await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.forEach(results, (result) => result._tag === "Right" ? ledger.release(result.right) : Effect.void)
    ))
    expect(await moneyViolations(gateway.query)).toEqual([])
  })

  it("settles concurrent calls in one statement with a running balance on each receipt", async () => {
    const account = await gateway.account({ credit: "1" })
    const reservations = (await gateway.run(reserveAll(account.id, ["0.2", "0.2", "0.2", "0.2"])))
      .map((result) => result._tag === "Right" ? result.right : undefined)
      .filter((reservation): reservation is Reservation => reservation !== undefined)
    expect(reservations).toHaveLength(4)
    // One is charged above its reservation: in full, the excess recorded as an overage.
    const totals = ["0.1", "0.15", "0.05", "0.5"]
    const receipts = await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.all(
        reservations.map((reservation, i) => ledger.settle(reservation, billFor(totals[i]!, "0.01"))),
        { concurrency: "unbounded" }
      )
    ))
    expect(receipts.map((receipt) => formatUsd(receipt.cost.total))).toEqual(
      ["0.100000000", "0.150000000", "0.050000000", "0.500000000"]
    )
    expect(receipts.map((receipt) => formatUsd(receipt.balanceAfter))).toEqual(
      ["0.900000000", "0.750000000", "0.700000000", "0.200000000"]
    )
    for (const receipt of receipts) expect(receipt.cost.upstream + receipt.cost.margin).toBe(receipt.cost.total)
    const overages = await gateway.query<{ id: string; receipt_id: string; data: unknown }>(
      "SELECT id, receipt_id, data FROM events WHERE account_id = $1 AND type = 'payment.overage'",
      [account.id]
    )
    // Its id is made from the receipt's, as those of the events read from a receipt are.
    const overageId = `evt_${receipts[3]!.id.slice(receipts[3]!.id.indexOf("_") + 1)}o`
    expect(overages).toEqual([
      {
        id: overageId,
        receipt_id: receipts[3]!.id,
        data: { held_usd: "0.200000000", charged_usd: "0.500000000", overage_usd: "0.300000000" }
      }
    ])
    // What the service answered is what it stored.
    const stored = await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.forEach(receipts, (receipt) => ledger.receipt(account.id, receipt.id))
    ))
    expect(stored.map(({ balanceAfter, cost, id }) => ({ balanceAfter, cost, id }))).toEqual(
      receipts.map(({ balanceAfter, cost, id }) => ({ balanceAfter, cost, id }))
    )
    expect(await moneyViolations(gateway.query)).toEqual([])
  })

  it("a settlement the database refuses fails alone: its batch is settled again one by one", async () => {
    const account = await gateway.account({ credit: "1" })
    const reservations = (await gateway.run(reserveAll(account.id, ["0.1", "0.1", "0.1", "0.1", "0.1"])))
      .map((result) => result._tag === "Right" ? result.right : undefined)
      .filter((reservation): reservation is Reservation => reservation !== undefined)
    // Passes the ledger's own checks, but PostgreSQL refuses a NUL in text: the whole statement fails.
    const poisoned = { ...billFor("0.01", "0.01"), model: "svc/pro\u0000" }
    const exits = await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.all(
        reservations.map((reservation, i) => Effect.exit(ledger.settle(reservation, i === 2 ? poisoned : billFor("0.05", "0.01")))),
        { concurrency: "unbounded" }
      )
    ))
    expect(exits.map((exit) => exit._tag)).toEqual(["Success", "Success", "Failure", "Success", "Success"])
    const [row] = await gateway.query<{ balance: string; receipts: number; open: number }>(
      `SELECT balance_usd::text AS balance,
              (SELECT count(*)::int FROM receipts WHERE account_id = $1) AS receipts,
              (SELECT count(*)::int FROM reservations WHERE account_id = $1 AND status = 'open') AS open
       FROM accounts WHERE id = $1`,
      [account.id]
    )
    expect(row).toEqual({ balance: "0.800000000", receipts: 4, open: 1 })
    // The failed call's hold is still open (nothing was written for it); it is released as the sweeper would.
    await gateway.run(Effect.flatMap(Ledger, (ledger) => ledger.release(reservations[2]!)))
    expect(await moneyViolations(gateway.query)).toEqual([])
  })

  it("settles and reserves in one statement, admitting from what the settlements freed", async () => {
    const account = await gateway.account({ credit: "1" })
    const held = (await gateway.run(reserveAll(account.id, ["0.5", "0.4"])))
      .map((result) => result._tag === "Right" ? result.right : undefined)
    const first = held[0]!
    // The first reservation runs alone; the settlement and the last reservation wait and go together.
    // Only after the settlement (0.5 held, 0.1 charged) does 0.45 fit: 0.9 − (0.4 + 0.05).
    const [alone, receipt, last] = await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.all([
        ledger.reserve({ accountId: account.id, requestId: "req_alone", amount: usd("0.05") }),
        ledger.settle(first, billFor("0.1", "0.01")),
        ledger.reserve({ accountId: account.id, requestId: "req_last", amount: usd("0.45") })
      ], { concurrency: "unbounded" })
    ))
    expect(formatUsd(receipt.balanceAfter)).toBe("0.900000000")
    expect(last.availableAfter).toBe(0n)
    const transactions = await gateway.query<{ receipt_id: string; type: string; xid: string }>(
      `SELECT receipt_id, type, xid::text FROM event_log WHERE account_id = $1 AND receipt_id IN ($2, $3, $4)
       AND type IN ('payment.reserved', 'payment.settled')`,
      [account.id, alone.id, first.id, last.id]
    )
    const xidOf = (id: string, type: string) => transactions.find((row) => row.receipt_id === id && row.type === type)?.xid
    expect(xidOf(first.id, "payment.settled")).toBeDefined()
    expect(xidOf(first.id, "payment.settled")).toBe(xidOf(last.id, "payment.reserved"))
    expect(xidOf(alone.id, "payment.reserved")).not.toBe(xidOf(last.id, "payment.reserved"))
    const [row] = await gateway.query<{ balance: string; reserved: string }>(
      "SELECT balance_usd::text AS balance, reserved_usd::text AS reserved FROM accounts WHERE id = $1",
      [account.id]
    )
    expect(row).toEqual({ balance: "0.900000000", reserved: "0.900000000" })
    await gateway.run(Effect.flatMap(Ledger, (ledger) => Effect.forEach([held[1]!, alone, last], ledger.release)))
    expect(await moneyViolations(gateway.query)).toEqual([])
  })

  it("a turn's statement the database refuses is settled and reserved apart: only the bad settlement fails", async () => {
    const account = await gateway.account({ credit: "1" })
    const held = (await gateway.run(reserveAll(account.id, ["0.1", "0.1"])))
      .map((result) => result._tag === "Right" ? result.right : undefined)
    const poisoned = { ...billFor("0.01", "0.01"), model: "svc/pro\u0000" }
    const exits = await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.all([
        Effect.exit(ledger.reserve({ accountId: account.id, requestId: "req_alone", amount: usd("0.05") })),
        Effect.exit(ledger.settle(held[0]!, poisoned)),
        Effect.exit(ledger.settle(held[1]!, billFor("0.05", "0.01"))),
        Effect.exit(ledger.reserve({ accountId: account.id, requestId: "req_last", amount: usd("0.2") }))
      ], { concurrency: "unbounded" })
    ))
    expect(exits.map((exit) => exit._tag)).toEqual(["Success", "Failure", "Success", "Success"])
    const [row] = await gateway.query<{ balance: string; reserved: string }>(
      "SELECT balance_usd::text AS balance, reserved_usd::text AS reserved FROM accounts WHERE id = $1",
      [account.id]
    )
    expect(row).toEqual({ balance: "0.950000000", reserved: "0.350000000" })
    await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      Effect.forEach(
        [held[0]!, ...exits.flatMap((exit, i) => i !== 2 && exit._tag === "Success" && "amount" in exit.value ? [exit.value] : [])],
        ledger.release
      )
    ))
    expect(await moneyViolations(gateway.query)).toEqual([])
  })

  it("refuses to settle a call twice", async () => {
    const account = await gateway.account({ credit: "1" })
    const [result] = await gateway.run(reserveAll(account.id, ["0.2"]))
    const reservation = result!._tag === "Right" ? result!.right : undefined
    await gateway.run(Effect.flatMap(Ledger, (ledger) => ledger.settle(reservation!, billFor("0.1", "0.01"))))
    await expect(
      gateway.run(Effect.flatMap(Ledger, (ledger) => ledger.settle(reservation!, billFor("0.1", "0.01"))))
    ).rejects.toThrow(/settled already/)
    const [row] = await gateway.query<{ balance: string }>(
      "SELECT balance_usd::text AS balance FROM accounts WHERE id = $1",
      [account.id]
    )
    expect(row!.balance).toBe("0.900000000")
    expect(await moneyViolations(gateway.query)).toEqual([])
  })
})
