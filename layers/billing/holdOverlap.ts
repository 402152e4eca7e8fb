/**
 * Reserving while the upstream request is already on its way. A call's
 * reservation is a database round trip, and so is the upstream request; when
 * this process last saw the account with plenty available, the two run at
 * once and the call waits for both, so the caller waits for the longer one
 * instead of their sum. Nothing reaches the caller before its reservation is
 * made, and a reservation refused (another process spent the balance
 * meanwhile) interrupts the request and answers 402 as before: the contract's
 * "reserve before any billable call" holds, at the cost of an upstream
 * request wasted in that race. An account not seen yet, or seen short,
 * reserves first, so a caller who cannot pay never starts an upstream
 * request (docs/architecture.md, "One call, stage by stage").
 */
import { Effect, Fiber } from "effect"
import type { Reservation } from "../../services/Ledger.ts"
import type { Nanos } from "../../services/Money.ts"

/** An overlapped call needs the account to have had at least this many times its estimate available. */
const COVER = 2n

/** Accounts remembered per process; past it the memory starts over (a hint, not a record). */
const MAX_ACCOUNTS = 10_000

/** What this process last saw each account have available, less what overlapped calls claimed since. */
export const makeOverlapHints = () => {
  const available = new Map<string, Nanos>()
  return {
    /**
     * Whether a call of `amount` may reserve alongside its request; if so it claims `amount` from
     * what was seen, so the overlapped calls of one process never add up to more than that.
     */
    claim: (accountId: string, amount: Nanos) => {
      const seen = available.get(accountId)
      if (seen === undefined || seen < amount * COVER) return false
      available.set(accountId, seen - amount)
      return true
    },
    /** A reservation made: what it saw available replaces what was known. */
    saw: (reservation: Reservation) => {
      if (reservation.availableAfter === undefined) return
      if (available.size >= MAX_ACCOUNTS && !available.has(reservation.accountId)) available.clear()
      available.set(reservation.accountId, reservation.availableAfter)
    },
    /** A reservation refused: the account reserves first until one is made again. */
    refused: (accountId: string) => void available.delete(accountId)
  }
}

/**
 * Runs `work` in a fiber of its own while `around` runs; `around` gets `work`'s outcome as an
 * effect to wait on. `work` is interrupted when `around` fails or is interrupted first. The
 * fiber is awaited, not joined: joining would merge its fiber refs (the service context) back.
 */
export const alongside = <A, E, R, B, E2, R2>(
  work: Effect.Effect<A, E, R>,
  around: (outcome: Effect.Effect<A, E>) => Effect.Effect<B, E2, R2>
): Effect.Effect<B, E2, R | R2> =>
  Effect.flatMap(Effect.fork(work), (working) =>
    around(Effect.flatten(Fiber.await(working))).pipe(Effect.onError(() => Fiber.interrupt(working))))
