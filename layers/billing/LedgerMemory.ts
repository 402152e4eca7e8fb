/**
 * The ledger in memory, for unit tests, under the same rules as LedgerPg:
 * a reservation is admitted only while the available balance (balance −
 * reserved) covers it; a settlement charges its bill even above what was
 * held (a `payment.overage` event; the balance may go below zero by it) and
 * writes the receipt, a ledger entry and the same events; a bill that cannot
 * be written (billCheck.ts) is a defect of that call alone; a call the
 * sweeper freed first is held again, up to what is available, and settled;
 * releasing twice frees once; `sweepExpired` frees the open
 * reservations whose lease (config `billing.reservationLeaseSeconds`, restarted
 * by `renew`) ran out by the `Clock`, so TestClock drives it. Also provides the `MemoryBank`
 * it keeps its state in (fund accounts with `openAccount` or AccountsMemory).
 *
 * Not modelled: group commit and the row lock (each call is one atomic step,
 * which is what the batches must amount to), transactions with the event log
 * (events go through `EventLog` one by one), and the database's clock (times
 * come from `Clock`). An unknown account has nothing available.
 */
import { Clock, Effect, Layer } from "effect"
import { AppConfig } from "../../services/Config.ts"
import { EventLog } from "../../services/EventLog.ts"
import { Ids } from "../../services/Ids.ts"
import { type Bill, Ledger, receiptOf, type Reservation, settlingAtOnce } from "../../services/Ledger.ts"
import { formatUsd as usd, type Nanos } from "../../services/Money.ts"
import { billProblem, refusedBill } from "./billCheck.ts"
import { cannotCover, receiptNotFound } from "./ledgerRefusals.ts"
import { MemoryBank, MemoryBankLive, type MemoryReservation } from "./memoryBank.ts"

const min = (a: Nanos, b: Nanos) => (a < b ? a : b)
const max = (a: Nanos, b: Nanos) => (a > b ? a : b)

const make = Effect.gen(function*() {
  const bank = yield* MemoryBank
  const ids = yield* Ids
  const events = yield* EventLog
  const leaseMs = (yield* AppConfig).file.billing.reservationLeaseSeconds * 1000

  /** Frees an open reservation; false when it was not open. */
  const free = (held: MemoryReservation, reason: "call_failed" | "lease_expired") => {
    if (held.status !== "open") return Effect.succeed(false)
    held.status = "released"
    bank.accounts.get(held.accountId)!.reserved -= held.amount
    return Effect.as(
      events.record({
        type: "payment.released",
        accountId: held.accountId,
        requestId: held.requestId,
        receiptId: held.id,
        data: { amount_usd: usd(held.amount), reason }
      }),
      true
    )
  }

  const settle = (reservation: Reservation, bill: Bill) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const held = bank.reservations.get(reservation.id)
      if (held === undefined || held.accountId !== reservation.accountId || held.status === "settled") {
        return yield* Effect.dieMessage(`Reservation ${reservation.id} was settled already.`)
      }
      const problem = billProblem(bill)
      if (problem !== undefined) {
        const defect = refusedBill(reservation.id, problem)
        yield* Effect.logError(defect.message)
        return yield* Effect.die(defect)
      }
      const account = bank.accounts.get(held.accountId)!
      if (held.status === "released") {
        // Freed by the sweeper (or a release) first: hold again what the call costs, up to what is available.
        held.amount = min(bill.cost.total, max(account.balance - account.reserved, 0n))
        account.reserved += held.amount
      }
      const charge = bill.cost.total
      held.status = "settled"
      account.balance -= charge
      account.reserved -= held.amount
      const at = new Date(now)
      const receipt = receiptOf(reservation, bill, { total: charge, balanceAfter: account.balance, createdAt: at, settledAt: at })
      bank.receipts.set(receipt.id, receipt)
      bank.entries.push({
        id: ids.make("led"),
        accountId: account.id,
        kind: "charge",
        amount: -charge,
        reference: receipt.id,
        balanceAfter: account.balance,
        createdAt: at
      })
      const about = { accountId: account.id, requestId: reservation.requestId, receiptId: receipt.id }
      yield* events.record({
        ...about,
        type: "payment.settled",
        data: { total_usd: usd(charge), released_usd: usd(max(reservation.amount - charge, 0n)) }
      })
      if (charge > held.amount) {
        yield* events.record({
          ...about,
          type: "payment.overage",
          data: { held_usd: usd(held.amount), charged_usd: usd(charge), overage_usd: usd(charge - held.amount) }
        })
      }
      yield* events.record({ ...about, type: "receipt.created", data: { model: bill.model, total_usd: usd(charge) } })
      for (const event of bill.events ?? []) yield* events.record({ ...about, type: event.type, data: event.data })
      return receipt
    })

  return Ledger.of({
    reserve: ({ accountId, amount, requestId }) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const id = ids.make("rcpt")
        const account = bank.accounts.get(accountId)
        if (account === undefined || amount > account.balance - account.reserved) {
          yield* events.record({ type: "payment.insufficient_funds", accountId, requestId, data: { estimated_usd: usd(amount) } })
          return yield* cannotCover(amount)
        }
        account.reserved += amount
        const reservation = { id, accountId, requestId, amount, reservedAt: new Date(now) }
        bank.reservations.set(id, { ...reservation, status: "open", expiresAt: now + leaseMs })
        yield* events.record({ type: "payment.reserved", accountId, requestId, receiptId: id, data: { amount_usd: usd(amount) } })
        return { ...reservation, availableAfter: account.balance - account.reserved }
      }),

    settleQueued: settlingAtOnce(settle),
    settle,
    release: (reservation) =>
      Effect.suspend(() => {
        const held = bank.reservations.get(reservation.id)
        return held === undefined ? Effect.void : Effect.asVoid(free(held, "call_failed"))
      }),

    renew: (reservations) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        for (const reservation of reservations) {
          const held = bank.reservations.get(reservation.id)
          if (held !== undefined && held.status === "open") held.expiresAt = now + leaseMs
        }
      }),

    sweepExpired: (kept = []) => Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const expired = [...bank.reservations.values()].filter((held) =>
        held.status === "open" && held.expiresAt < now && !kept.includes(held.id)
      )
      const freed = yield* Effect.forEach(expired, (held) => free(held, "lease_expired"))
      return freed.filter(Boolean).length
    }),

    receipt: (accountId, id) =>
      Effect.suspend(() => {
        const receipt = bank.receipts.get(id)
        return receipt === undefined || (accountId !== null && receipt.accountId !== accountId)
          ? Effect.fail(receiptNotFound(id))
          : Effect.succeed(receipt)
      })
  })
})

/** `Ledger`, and the `MemoryBank` it keeps accounts, reservations and receipts in. */
export const LedgerMemory: Layer.Layer<Ledger | MemoryBank, never, Ids | EventLog | AppConfig> = Layer.effect(
  Ledger,
  make
).pipe(Layer.provideMerge(MemoryBankLive))
