/**
 * The Ledger's contract (services/Ledger.ts) as one suite of assertions that
 * every implementation must pass: LedgerPg on a real database and
 * LedgerMemory (test/ledgerContract.test.ts), with the Accounts they charge
 * (AccountsPg, AccountsMemory). Each test opens its own account.
 */
import { expect } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { RecordedEvents } from "../../layers/events/EventLogMemory.ts"
import { Accounts } from "../../services/Accounts.ts"
import { type Bill, Ledger } from "../../services/Ledger.ts"
import { formatUsd, type Nanos, parseUsd } from "../../services/Money.ts"
import type { MoneyLayers } from "./moneyLayers.ts"
import { layer } from "./layer.ts"

/** A decimal USD text as nanos (0 for one that is not). */
export const usd = (text: string): Nanos => parseUsd(text).pipe((option) => option._tag === "Some" ? option.value : 0n)

export const billFor = (total: string, upstream = "0"): Bill => ({
  endpoint: "/v1/chat/completions",
  model: "svc/pro",
  tier: "pro",
  privacyClass: "standard_route",
  usage: { inputTokens: 10, outputTokens: 20 },
  price: { input: usd("1"), output: usd("2") },
  cost: { upstream: usd(upstream), margin: usd(total) - usd(upstream), total: usd(total) },
  attempts: [{ model: "svc/pro", outcome: "ok", latencyMs: 1 }],
  providerId: "sandbox",
  events: [{ type: "provider.route", data: { model: "svc/pro", attempt: 1 } }]
})

const openAccount = (credit: string) =>
  Effect.flatMap(Accounts, (accounts) => accounts.create({ name: "contract", credit: usd(credit) }))

const balances = (accountId: string) =>
  Effect.flatMap(Accounts, (accounts) => accounts.get(accountId)).pipe(
    Effect.map(({ balance, reserved }) => ({ balance: formatUsd(balance), reserved: formatUsd(reserved) })),
    Effect.orDie
  )

/** Type, then data with its keys sorted (jsonb hands keys back in its own order). */
const sortKey = ({ data, type }: { readonly type: string; readonly data: Readonly<Record<string, unknown>> }) =>
  `${type} ${JSON.stringify(data, Object.keys(data).sort())}`

/** The account's events without ids and times, in a stable order. */
export const eventsOf = (accountId: string, ...types: ReadonlyArray<string>) =>
  Effect.flatMap(RecordedEvents, (recorded) => recorded.all).pipe(
    Effect.map((events) =>
      events
        .filter((event) => event.accountId === accountId && (types.length === 0 || types.includes(event.type)))
        .map(({ data, receiptId, requestId, type }) => ({ type, requestId, receiptId, data }))
        .sort((a, b) => sortKey(a).localeCompare(sortKey(b)))
    )
  )

export const ledgerContract = (implementation: MoneyLayers) =>
  layer(implementation.layer, { timeout: "60 seconds" })(`Ledger contract: ${implementation.name}`, (it) => {
    it.effect("reserve then settle: the receipt adds up and the balance drops by exactly its total", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const account = yield* openAccount("1")
        const reservation = yield* ledger.reserve({ accountId: account.id, requestId: "req_a", amount: usd("0.3") })
        expect(reservation).toMatchObject({ accountId: account.id, requestId: "req_a", amount: usd("0.3") })
        expect(yield* balances(account.id)).toEqual({ balance: "1.000000000", reserved: "0.300000000" })

        const receipt = yield* ledger.settle(reservation, billFor("0.12", "0.05"))
        expect(receipt).toMatchObject({ id: reservation.id, accountId: account.id, requestId: "req_a", estimated: usd("0.3") })
        expect(receipt.cost).toEqual({ upstream: usd("0.05"), margin: usd("0.07"), total: usd("0.12") })
        expect(receipt.balanceAfter).toBe(usd("0.88"))
        expect(yield* balances(account.id)).toEqual({ balance: "0.880000000", reserved: "0.000000000" })
        expect(yield* ledger.receipt(account.id, reservation.id)).toEqual(receipt)

        expect(yield* eventsOf(account.id, "payment.reserved", "payment.settled", "receipt.created", "provider.route"))
          .toEqual([
            { type: "payment.reserved", requestId: "req_a", receiptId: reservation.id, data: { amount_usd: "0.300000000" } },
            {
              type: "payment.settled",
              requestId: "req_a",
              receiptId: reservation.id,
              data: { total_usd: "0.120000000", released_usd: "0.180000000" }
            },
            { type: "provider.route", requestId: "req_a", receiptId: reservation.id, data: { model: "svc/pro", attempt: 1 } },
            { type: "receipt.created", requestId: "req_a", receiptId: reservation.id, data: { model: "svc/pro", total_usd: "0.120000000" } }
          ])
      }))

    it.effect("each reservation tells what the account had available right after it, in a batch too", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const account = yield* openAccount("1")
        const reserve = (amount: string) => ledger.reserve({ accountId: account.id, requestId: "req_v", amount: usd(amount) })
        const first = yield* reserve("0.3")
        expect(first.availableAfter).toBe(usd("0.7"))
        const second = yield* reserve("0.5")
        expect(second.availableAfter).toBe(usd("0.2"))
        // Together (LedgerPg admits all but the first in one statement): each sees the ones admitted before it.
        const together = yield* Effect.all([reserve("0.05"), reserve("0.05"), reserve("0.05")], { concurrency: "unbounded" })
        expect(together.map((reservation) => formatUsd(reservation.availableAfter!)).sort())
          .toEqual(["0.050000000", "0.100000000", "0.150000000"])
        yield* Effect.forEach([first, second, ...together], (reservation) => ledger.release(reservation))
      }))

    it.effect("usage above the hold is charged in full: the balance goes below zero by the excess, with an overage event", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const account = yield* openAccount("0.5")
        const reservation = yield* ledger.reserve({ accountId: account.id, requestId: "req_b", amount: usd("0.5") })
        const receipt = yield* ledger.settle(reservation, billFor("0.8", "0.3"))
        expect(receipt.cost).toEqual({ upstream: usd("0.3"), margin: usd("0.5"), total: usd("0.8") })
        expect(receipt.balanceAfter).toBe(usd("-0.3"))
        expect(yield* balances(account.id)).toEqual({ balance: "-0.300000000", reserved: "0.000000000" })
        expect(yield* ledger.receipt(account.id, reservation.id)).toEqual(receipt)
        expect(yield* eventsOf(account.id, "payment.overage", "payment.settled")).toEqual([
          {
            type: "payment.overage",
            requestId: "req_b",
            receiptId: reservation.id,
            data: { held_usd: "0.500000000", charged_usd: "0.800000000", overage_usd: "0.300000000" }
          },
          {
            type: "payment.settled",
            requestId: "req_b",
            receiptId: reservation.id,
            data: { total_usd: "0.800000000", released_usd: "0.000000000" }
          }
        ])

        // A negative balance admits nothing, not even a zero hold, until a credit covers it.
        for (const amount of ["0.000000001", "0"]) {
          const refused = yield* Effect.flip(ledger.reserve({ accountId: account.id, requestId: "req_b2", amount: usd(amount) }))
          expect(refused._tag).toBe("InsufficientFunds")
        }
        const accounts = yield* Accounts
        yield* accounts.addCredit(account.id, { amount: usd("0.4"), reference: "after-overage" })
        expect((yield* Effect.flip(ledger.reserve({ accountId: account.id, requestId: "req_b3", amount: usd("0.2") })))._tag)
          .toBe("InsufficientFunds")
        const fits = yield* ledger.reserve({ accountId: account.id, requestId: "req_b4", amount: usd("0.1") })
        yield* ledger.release(fits)
        expect(yield* balances(account.id)).toEqual({ balance: "0.100000000", reserved: "0.000000000" })
      }))

    it.effect("a bill that cannot be written fails alone: settled together, the others get their receipts", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const account = yield* openAccount("1")
        const reservations = yield* Effect.forEach(
          ["req_h1", "req_h2", "req_h3", "req_h4"],
          (requestId) => ledger.reserve({ accountId: account.id, requestId, amount: usd("0.1") })
        )
        const good = billFor("0.05")
        const bad = [
          { ...good, usage: { inputTokens: -1, outputTokens: 20 } },
          { ...good, usage: { inputTokens: 10, outputTokens: 2 ** 31 } }
        ]
        const bills = [good, bad[0]!, good, bad[1]!]
        const exits = yield* Effect.all(
          reservations.map((reservation, i) => Effect.exit(ledger.settle(reservation, bills[i]!))),
          { concurrency: "unbounded" }
        )
        expect(exits.map((exit) => exit._tag)).toEqual(["Success", "Failure", "Success", "Failure"])
        expect(exits.map((exit) => Exit.isFailure(exit) && exit.cause._tag === "Die")).toEqual([false, true, false, true])
        expect(yield* balances(account.id)).toEqual({ balance: "0.900000000", reserved: "0.200000000" })
        // The refused calls' holds stay open until released (or swept): nothing was written for them.
        for (const i of [1, 3]) {
          expect(Exit.isFailure(yield* Effect.exit(ledger.receipt(account.id, reservations[i]!.id)))).toBe(true)
          yield* ledger.release(reservations[i]!)
        }
        expect(yield* balances(account.id)).toEqual({ balance: "0.900000000", reserved: "0.000000000" })
      }))

    it.effect("insufficient funds when the available balance (balance − reserved) is below the amount", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const account = yield* openAccount("1")
        const first = yield* ledger.reserve({ accountId: account.id, requestId: "req_c1", amount: usd("0.6") })
        const refused = yield* Effect.flip(ledger.reserve({ accountId: account.id, requestId: "req_c2", amount: usd("0.6") }))
        expect(refused._tag).toBe("InsufficientFunds")
        const exact = yield* ledger.reserve({ accountId: account.id, requestId: "req_c3", amount: usd("0.4") })
        expect(yield* balances(account.id)).toEqual({ balance: "1.000000000", reserved: "1.000000000" })
        expect(yield* eventsOf(account.id, "payment.insufficient_funds")).toEqual([
          { type: "payment.insufficient_funds", requestId: "req_c2", receiptId: undefined, data: { estimated_usd: "0.600000000" } }
        ])
        yield* ledger.release(first)
        yield* ledger.release(exact)
      }))

    it.effect("releasing twice is harmless: freed once, one event, nothing charged", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const account = yield* openAccount("1")
        const reservation = yield* ledger.reserve({ accountId: account.id, requestId: "req_d", amount: usd("0.25") })
        yield* ledger.release(reservation)
        yield* ledger.release(reservation)
        expect(yield* balances(account.id)).toEqual({ balance: "1.000000000", reserved: "0.000000000" })
        expect(yield* eventsOf(account.id, "payment.released")).toEqual([
          { type: "payment.released", requestId: "req_d", receiptId: reservation.id, data: { amount_usd: "0.250000000", reason: "call_failed" } }
        ])
      }))

    it.effect("settling twice is a defect, and the first settlement stands", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const account = yield* openAccount("1")
        const reservation = yield* ledger.reserve({ accountId: account.id, requestId: "req_e", amount: usd("0.2") })
        yield* ledger.settle(reservation, billFor("0.1"))
        const again = yield* Effect.exit(ledger.settle(reservation, billFor("0.1")))
        expect(Exit.isFailure(again) && again.cause._tag === "Die").toBe(true)
        expect(yield* balances(account.id)).toEqual({ balance: "0.900000000", reserved: "0.000000000" })
      }))

    it.effect("an expired lease is swept once; the late settlement holds what is available again and charges in full", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const account = yield* openAccount("1")
        const reservation = yield* ledger.reserve({ accountId: account.id, requestId: "req_f", amount: usd("0.4") })
        expect(yield* ledger.sweepExpired()).toBe(0)
        yield* implementation.passLease
        expect(yield* ledger.sweepExpired()).toBe(1)
        expect(yield* ledger.sweepExpired()).toBe(0)
        expect(yield* balances(account.id)).toEqual({ balance: "1.000000000", reserved: "0.000000000" })
        expect(yield* eventsOf(account.id, "payment.released")).toEqual([
          { type: "payment.released", requestId: "req_f", receiptId: reservation.id, data: { amount_usd: "0.400000000", reason: "lease_expired" } }
        ])

        // Meanwhile another call holds most of the balance: the late one holds what is left and is charged in full.
        const other = yield* ledger.reserve({ accountId: account.id, requestId: "req_f2", amount: usd("0.9") })
        const receipt = yield* ledger.settle(reservation, billFor("0.3"))
        expect(receipt.cost.total).toBe(usd("0.3"))
        expect(yield* balances(account.id)).toEqual({ balance: "0.700000000", reserved: "0.900000000" })
        expect((yield* eventsOf(account.id, "payment.overage")).map((event) => event.data)).toEqual([
          { held_usd: "0.100000000", charged_usd: "0.300000000", overage_usd: "0.200000000" }
        ])
        yield* ledger.release(other)
      }))

    it.effect("renewed leases are not swept until they run out again; renewing an ended reservation does not reopen it", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const account = yield* openAccount("1")
        const running = yield* ledger.reserve({ accountId: account.id, requestId: "req_r", amount: usd("0.2") })
        const failed = yield* ledger.reserve({ accountId: account.id, requestId: "req_s", amount: usd("0.1") })
        const alsoRunning = yield* ledger.reserve({ accountId: account.id, requestId: "req_t", amount: usd("0.3") })
        yield* ledger.release(failed)
        yield* implementation.passLease
        // The heartbeat of the calls still running, all in one renewal: their leases start again from now.
        yield* ledger.renew([running, failed, alsoRunning])
        expect(yield* ledger.sweepExpired()).toBe(0)
        expect(yield* balances(account.id)).toEqual({ balance: "1.000000000", reserved: "0.500000000" })
        yield* implementation.passLease
        expect(yield* ledger.sweepExpired()).toBe(2)
        expect(yield* balances(account.id)).toEqual({ balance: "1.000000000", reserved: "0.000000000" })
        expect((yield* eventsOf(account.id, "payment.released")).map((event) => event.data.reason)).toEqual([
          "call_failed",
          "lease_expired",
          "lease_expired"
        ])
      }))

    it.effect("Accounts: a credit is idempotent by reference, and a reused reference with another amount conflicts", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const account = yield* openAccount("1")
        const entry = yield* accounts.addCredit(account.id, { amount: usd("2"), reference: "topup-1" })
        expect(entry).toMatchObject({ kind: "credit", amount: usd("2"), reference: "topup-1", balanceAfter: usd("3") })
        expect(yield* accounts.addCredit(account.id, { amount: usd("2"), reference: "topup-1" })).toEqual(entry)
        expect((yield* Effect.flip(accounts.addCredit(account.id, { amount: usd("5"), reference: "topup-1" })))._tag).toBe("Conflict")
        expect((yield* Effect.flip(accounts.addCredit("acct_missing", { amount: usd("1"), reference: "x" })))._tag).toBe("NotFound")
        expect(yield* balances(account.id)).toEqual({ balance: "3.000000000", reserved: "0.000000000" })
        expect((yield* eventsOf(account.id, "payment.credit_added")).map((event) => event.data.reference)).toEqual(["initial", "topup-1"])
      }))

    it.effect("a receipt is found only for its own account", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const owner = yield* openAccount("1")
        const other = yield* openAccount("1")
        const reservation = yield* ledger.reserve({ accountId: owner.id, requestId: "req_g", amount: usd("0.1") })
        const receipt = yield* ledger.settle(reservation, billFor("0.1"))
        expect((yield* ledger.receipt(owner.id, receipt.id)).id).toBe(receipt.id)
        expect((yield* Effect.flip(ledger.receipt(other.id, receipt.id)))._tag).toBe("NotFound")
        expect((yield* Effect.flip(ledger.receipt(owner.id, "rcpt_missing")))._tag).toBe("NotFound")
      }))
  })
