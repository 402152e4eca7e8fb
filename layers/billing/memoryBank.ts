/**
 * The money state that the in-memory `Accounts` and `Ledger` share
 * (layers/accounts/AccountsMemory.ts, layers/billing/LedgerMemory.ts): plain
 * maps, changed only inside one synchronous step each, so every change is
 * atomic as a row lock would make it. Tests may read it, or open a funded
 * account directly with `openAccount`.
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { Account, LedgerEntry } from "../../services/Accounts.ts"
import type { Receipt, Reservation } from "../../services/Ledger.ts"
import type { Nanos } from "../../services/Money.ts"

export type MemoryAccount = { -readonly [K in keyof Account]: Account[K] }

export interface MemoryReservation extends Omit<Reservation, "amount"> {
  /** What it holds now (a reservation the sweeper freed is held again at settlement). */
  amount: Nanos
  status: "open" | "settled" | "released"
  /** Epoch ms of the `Clock`; `renew` moves it on. */
  expiresAt: number
}

export class MemoryBank extends Context.Tag("svc/test/MemoryBank")<MemoryBank, {
  readonly accounts: Map<string, MemoryAccount>
  readonly reservations: Map<string, MemoryReservation>
  readonly receipts: Map<string, Receipt>
  /** Every balance change, oldest first. */
  readonly entries: Array<LedgerEntry>
}>() {}

/** An empty bank per build. */
export const MemoryBankLive: Layer.Layer<MemoryBank> = Layer.sync(MemoryBank, () => ({
  accounts: new Map(),
  reservations: new Map(),
  receipts: new Map(),
  entries: []
}))

/** Opens an account with a balance, without events or ledger entries (a fixture for unit tests). */
export const openAccount = (
  input: { readonly id: string; readonly balance: Nanos; readonly name?: string }
): Effect.Effect<MemoryAccount, never, MemoryBank> =>
  Effect.gen(function*() {
    const bank = yield* MemoryBank
    const now = yield* Clock.currentTimeMillis
    const account: MemoryAccount = {
      id: input.id,
      name: input.name ?? "test",
      balance: input.balance,
      reserved: 0n,
      createdAt: new Date(now)
    }
    bank.accounts.set(account.id, account)
    return account
  })
