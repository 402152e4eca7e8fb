/**
 * Calls held from this process's credit leases (creditLeases.ts), as the
 * PostgreSQL ledger runs them: a reservation comes from the account's lease
 * when it covers it, with no statement, else it is made on its own (and what
 * that statement saw available may grant a lease for the next calls). The
 * lease's takes and gives back go in the account's ledger turns, after its
 * settlements and reservations, so a process never has two statements of
 * one account in flight. Every second the leases idle since the last second
 * go back (a give back that failed is tried again then, and a lease whose
 * take's answer was lost goes back as if granted); every beat the
 * others are renewed, and one the sweeper freed (its process stalled past
 * its time) is forgotten. A call held from a lease ends on it once, when it
 * is first settled or released, even if its rows cannot be written then.
 * When the process stops, all go back.
 */
import { Effect, Exit, FiberSet, type Scope } from "effect"
import type { InsufficientFunds } from "../../services/ApiError.ts"
import type { Ids } from "../../services/Ids.ts"
import type { Reservation } from "../../services/Ledger.ts"
import type { SerialBatches } from "../storage/serialBatches.ts"
import { type CreditLease, makeCreditLeases, type Take } from "./creditLeases.ts"
import type { makeLeaseStatements } from "./ledgerLease.ts"
import type { LeaseGrant, LedgerAnswer, LedgerItem } from "./ledgerRows.ts"

/** How often idle leases go back. */
const LEASE_SWEEP_MS = 1000

type ReserveInput = { readonly accountId: string; readonly requestId: string; readonly amount: bigint }
/** How the ledger reserves a call with a statement of its own. */
type ReserveAlone = (input: ReserveInput) => Effect.Effect<Reservation, InsufficientFunds>

export const makeLeasedHolds = (options: {
  readonly turns: SerialBatches<LedgerItem, LedgerAnswer, InsufficientFunds>
  readonly statements: ReturnType<typeof makeLeaseStatements>
  readonly ids: typeof Ids.Service
  /** How often leases in use are renewed. */
  readonly beatMillis: number
}): Effect.Effect<{
  readonly reserve: (
    input: ReserveInput,
    alone: ReserveAlone
  ) => Effect.Effect<Reservation, InsufficientFunds>
  /** Whether the account's lease covers `amount` now: `reserve` would answer at once. */
  readonly covers: (accountId: string, amount: bigint) => boolean
  /** A call held from a lease is being settled: its credit leaves the lease with the settlement. */
  readonly settling: (reservation: Reservation) => void
  readonly release: (reservation: Reservation) => Effect.Effect<void>
}, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { beatMillis, ids, statements, turns } = options
    const leases = makeCreditLeases(() => ids.make("lse"))
    const clock = yield* Effect.clock

    // A take goes at once, in a fiber of its own (a sent item would linger for the account's next
    // statement, and a busy account's lease would run out first).
    const takes = yield* FiberSet.make()
    const send = (take: Take) =>
      FiberSet.run(
        takes,
        Effect.flatMap(
          Effect.exit(turns.submit(take.lease.accountId, { _tag: "lease", leaseId: take.lease.id, amount: take.amount })),
          (answer) =>
            Effect.sync(() => {
              if (Exit.isFailure(answer)) return leases.lost(take.lease)
              const grant = answer.value as LeaseGrant
              leases.took(take.lease, grant.granted, grant.availableAfter)
            })
        )
      )
    /** Leases whose give back failed (the database was away): tried again at the next sweep. */
    const failed: Array<CreditLease> = []
    const giveBack = (lease: CreditLease) =>
      turns.send(lease.accountId, { _tag: "giveBack", leaseId: lease.id }, (answer) => {
        if (Exit.isFailure(answer)) failed.push(lease)
      })

    const sweep = Effect.suspend(() =>
      Effect.forEach([...failed.splice(0), ...leases.sweep()], giveBack, { discard: true })
    )
    let sinceBeat = 0
    const renew = Effect.suspend(() => {
      sinceBeat += LEASE_SWEEP_MS
      const held = leases.ids()
      if (sinceBeat < beatMillis || held.length === 0) return Effect.void
      sinceBeat = 0
      return Effect.catchAllCause(Effect.map(statements.renew(held), leases.keepOnly), () => Effect.void)
    })
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(LEASE_SWEEP_MS), Effect.zipRight(sweep, renew))))
    // Registered after the turns were made: runs before they flush, so these go with what they flush.
    yield* Effect.addFinalizer(() => Effect.forEach(leases.all(), giveBack, { discard: true }))

    /** A reservation made on its own; what it saw available may grant a lease for the next calls. */
    const reservedAlone = (input: ReserveInput, alone: ReserveAlone) =>
      alone(input).pipe(Effect.tapBoth({
        onFailure: () => Effect.sync(() => leases.refused(input.accountId)),
        onSuccess: (made) => {
          const take = made.availableAfter === undefined
            ? undefined
            : leases.saw(input.accountId, input.amount, made.availableAfter)
          return take === undefined ? Effect.void : send(take)
        }
      }))

    return {
      // From the lease when called (an Exit: services/atOnce.ts), so a busy account's hold takes no step.
      reserve: (input, alone) => {
        if (!leases.covers(input.accountId, input.amount)) return Effect.suspend(() => reservedAlone(input, alone))
        const id = ids.make("rcpt")
        const lease = leases.claim(input.accountId, input.amount, id)!
        const reservation: Reservation = {
          id,
          accountId: input.accountId,
          requestId: input.requestId,
          amount: input.amount,
          reservedAt: new Date(clock.unsafeCurrentTimeMillis()),
          leaseId: lease.id
        }
        const take = leases.refill(lease)
        return take === undefined ? Effect.succeed(reservation) : Effect.as(send(take), reservation)
      },

      covers: leases.covers,

      settling: (reservation) => {
        if (reservation.leaseId !== undefined) leases.ended(reservation.leaseId, reservation.id, 0n)
      },

      // Also when its rows cannot be written (the database is away): the call has ended all the same.
      release: (reservation) =>
        Effect.ensuring(
          statements.released(reservation),
          Effect.sync(() => leases.ended(reservation.leaseId!, reservation.id, reservation.amount))
        )
    }
  })
