/**
 * Accounts and credits in memory, for unit tests, in the `MemoryBank` that
 * LedgerMemory charges (provide it with LedgerMemory, or MemoryBankLive):
 * the same ids, events (`account.created`, `payment.credit_added`) and
 * ledger entries as AccountsPg, and credits idempotent by reference (the
 * same amount answers the first entry; another amount is a conflict).
 *
 * Not modelled: transactions (the account and its events are written in
 * separate steps) and the database's clock (times come from `Clock`).
 */
import { Clock, Effect, Layer } from "effect"
import { Accounts, type LedgerEntry } from "../../services/Accounts.ts"
import { Conflict, type NotFound } from "../../services/ApiError.ts"
import { accountNotFound } from "./accountRefusals.ts"
import { EventLog } from "../../services/EventLog.ts"
import { Ids } from "../../services/Ids.ts"
import { formatUsd, type Nanos } from "../../services/Money.ts"
import { pageOf } from "../../services/Pagination.ts"
import { type MemoryAccount, MemoryBank } from "../billing/memoryBank.ts"
import { quote } from "../../services/quote.ts"

export const AccountsMemory: Layer.Layer<Accounts, never, MemoryBank | Ids | EventLog> = Layer.effect(
  Accounts,
  Effect.gen(function*() {
    const bank = yield* MemoryBank
    const ids = yield* Ids
    const events = yield* EventLog

    /** Credits at once (no step between the check and the change), then records the event. */
    const credit = (account: MemoryAccount, amount: Nanos, reference: string, now: number) => {
      account.balance += amount
      const entry: LedgerEntry = {
        id: ids.make("led"),
        accountId: account.id,
        kind: "credit",
        amount,
        reference,
        balanceAfter: account.balance,
        createdAt: new Date(now)
      }
      bank.entries.push(entry)
      return Effect.as(
        events.record({
          type: "payment.credit_added",
          accountId: account.id,
          data: { ledger_entry_id: entry.id, amount_usd: formatUsd(amount), reference }
        }),
        entry
      )
    }

    return Accounts.of({
      create: ({ credit: initialCredit, name }) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const account: MemoryAccount = { id: ids.make("acct"), name, balance: 0n, reserved: 0n, createdAt: new Date(now) }
          bank.accounts.set(account.id, account)
          yield* events.record({ type: "account.created", accountId: account.id, data: { name } })
          if (initialCredit !== undefined && initialCredit > 0n) yield* credit(account, initialCredit, "initial", now)
          return { ...account }
        }),

      get: (id) =>
        Effect.suspend(() => {
          const account = bank.accounts.get(id)
          return account === undefined ? Effect.fail(accountNotFound(id)) : Effect.succeed({ ...account })
        }),

      list: (request) => Effect.sync(() => pageOf([...bank.accounts.values()].map((account) => ({ ...account })), request)),

      addCredit: (accountId, { amount, reference }) =>
        Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<LedgerEntry, NotFound | Conflict> => {
          const account = bank.accounts.get(accountId)
          if (account === undefined) return Effect.fail(accountNotFound(accountId))
          const entry = bank.entries.find((entry) =>
            entry.accountId === accountId && entry.kind === "credit" && entry.reference === reference
          )
          if (entry === undefined) return credit(account, amount, reference, now)
          if (entry.amount === amount) return Effect.succeed(entry)
          return Effect.fail(
            new Conflict({
              message: `Reference "${quote(reference)}" was already used for a credit of ${formatUsd(entry.amount)} USD.`,
              param: "reference"
            })
          )
        })
    })
  })
)
