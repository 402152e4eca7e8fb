/**
 * Settlements the ledger could not write (its database unreachable, or a
 * statement failed) are kept here, durably, instead of being dropped: the
 * caller whose upstream answered still gets the answer, and the settlement is
 * written once the database is back — by a background retry, by the
 * reservation sweeper before it releases anything, and on the next start
 * after a crash. Each reservation is settled at most once: keeping it twice
 * keeps it once, and a replay of a settlement that did reach the ledger finds
 * its receipt and drops it.
 */
import { Context, type Effect } from "effect"
import type { Bill, Reservation } from "./Ledger.ts"

/** One kept settlement: what `Ledger.settle` was asked to write. */
export interface KeptSettlement {
  readonly reservation: Reservation
  readonly bill: Bill
}

/** What one replay did. */
export interface Replayed {
  /** Written to the ledger now, or found written already. */
  readonly settled: number
  /** Still kept: the database could not take them yet. */
  readonly pending: number
}

export class SettlementJournal extends Context.Tag("svc/SettlementJournal")<SettlementJournal, {
  /** Keeps a settlement; succeeds once it is on disk. A reservation already kept is kept once. */
  readonly keep: (settlement: KeptSettlement) => Effect.Effect<void>
  /** Writes every kept settlement it can to the ledger; the rest stay kept. */
  readonly replay: Effect.Effect<Replayed>
  /** Ids of the reservations whose settlement is kept: their holds must not be released. */
  readonly pending: Effect.Effect<ReadonlyArray<string>>
}>() {}
