/**
 * The ledger in PostgreSQL. Each account's calls are batched (group commit):
 * per process, one turn of ledger statements per account is in flight, and
 * the calls that arrive meanwhile go together in the next turn (a settlement
 * statement, then a reservation statement).
 * - A reservation statement locks the account row and admits its calls in
 *   arrival order while the available balance covers them, so concurrent
 *   calls in any number of processes can never reserve more than there is
 *   (layers/billing/ledgerReserve.ts).
 * - A settlement statement closes the reservations (each once), charges, and
 *   writes the ledger entries, receipts and events (ledgerSettle.ts); a bad
 *   settlement fails alone, never its batch or the turn's reservations.
 * - A turn with both kinds runs them as one statement (ledgerTurn.ts).
 * - A queued settlement (`settleQueued`, a call already answered) waits up to
 *   50 ms for the account's next reservation in this process, to go in one
 *   turn with it, before it goes alone.
 * - A busy account's calls are held from this process's credit lease on it,
 *   with no statement; the lease's takes and gives back go in the account's
 *   turns (leasedHolds.ts, creditLeases.ts, ledgerLease.ts).
 * Releases, lease renewals and the lease sweep are single statements (ledgerRelease.ts). The
 * reservation and settlement statements, two per call, run on the pool directly (pgPool.ts).
 */
import { SqlClient } from "@effect/sql"
import { Cause, Effect, Exit, Layer } from "effect"
import type { InsufficientFunds, NotFound } from "../../services/ApiError.ts"
import { receiptNotFound } from "./ledgerRefusals.ts"
import { AppConfig } from "../../services/Config.ts"
import { isDatabaseOutage } from "../../services/DatabaseStatus.ts"
import { Ids } from "../../services/Ids.ts"
import { Ledger, type Receipt, type Reservation } from "../../services/Ledger.ts"
import type { Nanos } from "../../services/Money.ts"
import { PgPool, poolStatements } from "../storage/pgPool.ts"
import { makeSerialBatches } from "../storage/serialBatches.ts"
import { makeLeasedHolds } from "./leasedHolds.ts"
import { makeLeaseStatements } from "./ledgerLease.ts"
import { makeRelease, makeRenew, sweepExpired } from "./ledgerRelease.ts"
import { makeReserveBatch } from "./ledgerReserve.ts"
import { type LedgerAnswer, type LedgerItem, type ReceiptRow, type ReserveItem, toReceipt } from "./ledgerRows.ts"
import { makeSettleBatch } from "./ledgerSettle.ts"
import { makeLedgerTurn } from "./ledgerTurn.ts"

/** Calls one statement may carry; more wait for the next. */
const MAX_BATCH = 64

/**
 * How long a queued settlement waits for the account's next reservation in this process, to go
 * in one turn with it (at one connection: one statement a call, not two), before it goes alone.
 */
const SETTLE_LINGER_MS = 50

/** A receipt whose reservation is still open is looked for this often, this many times more (half a second). */
const RECEIPT_LOOK_MILLIS = 25
const RECEIPT_LOOKS = 20

/** A lease statement's exit as a turn answers it: its failure a defect (no caller's error to give). */
const asDefect = <A>(exit: Exit.Exit<A, unknown>): Exit.Exit<A> =>
  Exit.isSuccess(exit) ? Exit.succeed(exit.value) : Exit.die(Cause.squash(exit.cause))

export const LedgerPg = Layer.scoped(
  Ledger,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const { file } = yield* AppConfig
    const lease = file.billing.reservationLeaseSeconds

    // The two statements of every call go on the pool directly (layers/storage/pgPool.ts).
    const onPool = poolStatements(yield* PgPool)
    const reserveBatch = makeReserveBatch(onPool, ids, lease)
    const settlement = makeSettleBatch(onPool, sql, ids)
    const { settleBatch } = settlement
    const bothAtOnce = makeLedgerTurn(onPool, ids, lease, settlement)
    const leaseStatements = makeLeaseStatements(onPool, sql, ids, lease)

    const reserveOrFail = (accountId: string, items: ReadonlyArray<ReserveItem>) =>
      Effect.map(Effect.exit(reserveBatch(accountId, items)), (exit) =>
        Exit.isSuccess(exit)
          ? exit.value
          : items.map((): Exit.Exit<Reservation, InsufficientFunds> => Exit.die(Cause.squash(exit.cause))))

    /**
     * One queue per account for both kinds, so a process has at most one ledger statement of an
     * account in flight: statements of one account only queue on its row lock in PostgreSQL, and
     * waiting there costs more than waiting here. Settlements go first: they free credit.
     */
    const ledgerTurn = (accountId: string, items: ReadonlyArray<LedgerItem>) =>
      Effect.gen(function*() {
        const settling = items.flatMap((item) => item._tag === "settle" ? [item] : [])
        const reserving = items.flatMap((item) => item._tag === "reserve" ? [item] : [])
        const leasing = items.flatMap((item) => item._tag === "lease" || item._tag === "giveBack" ? [item] : [])
        let settled: ReadonlyArray<Exit.Exit<Receipt>> | undefined
        let reserved: ReadonlyArray<Exit.Exit<Reservation, InsufficientFunds>> | undefined
        // Both kinds, and no bill to refuse: one statement (ledgerTurn.ts). If it fails, nothing of it was
        // written, and the two statements below sort out which call it was.
        if (settling.length > 0 && reserving.length > 0 && settlement.allWritable(settling)) {
          const together = yield* Effect.exit(bothAtOnce(accountId, settling, reserving))
          if (Exit.isSuccess(together)) ({ holds: reserved, receipts: settled } = together.value)
          else if (!isDatabaseOutage(together.cause)) {
            yield* Effect.logWarning("a ledger turn's statement failed; settling and reserving apart", together.cause)
          }
        }
        settled ??= settling.length > 0 ? yield* settleBatch(accountId, settling) : []
        // Settlements are committed by now: a failed reservation statement fails only the reservations.
        reserved ??= reserving.length > 0 ? yield* reserveOrFail(accountId, reserving) : []
        // Leases last: a take sees the credit the settlements freed and the reservations held.
        const leased = yield* Effect.forEach(leasing, (item) =>
          Effect.exit(item._tag === "lease"
            ? leaseStatements.take(item.leaseId, accountId, item.amount)
            : leaseStatements.giveBack(item.leaseId)))
        let nextSettled = 0
        let nextReserved = 0
        let nextLeased = 0
        return items.map((item): Exit.Exit<LedgerAnswer, InsufficientFunds> =>
          item._tag === "settle"
            ? settled[nextSettled++]!
            : item._tag === "reserve"
            ? reserved[nextReserved++]!
            : asDefect(leased[nextLeased++]!)
        )
      })
    const turns = yield* makeSerialBatches(ledgerTurn, MAX_BATCH, SETTLE_LINGER_MS)
    const leased = yield* makeLeasedHolds({
      turns,
      statements: leaseStatements,
      ids,
      beatMillis: Math.max(1, Math.floor((lease * 1000) / 3))
    })

    // Uninterruptible: once submitted, the batch may admit it, and only the caller can release it.
    const reserveAlone = (input: { readonly accountId: string; readonly requestId: string; readonly amount: Nanos }) =>
      Effect.uninterruptible(turns.submit(input.accountId, { _tag: "reserve", ...input })) as Effect.Effect<
        Reservation,
        InsufficientFunds
      >
    const releaseAlone = makeRelease(sql, ids)

    return {
      reserve: (input) => leased.reserve(input, reserveAlone),
      reservesAtOnce: leased.covers,

      settle: (reservation, bill) =>
        Effect.suspend(() => {
          leased.settling(reservation)
          return Effect.uninterruptible(turns.submit(reservation.accountId, { _tag: "settle", reservation, bill })) as Effect.Effect<
            Receipt
          >
        }),

      // Queued when called (services/atOnce.ts): a call's work after its answer, with no step of its own.
      settleQueued: (reservation, bill, onAnswer) => {
        leased.settling(reservation)
        return turns.send(reservation.accountId, { _tag: "settle", reservation, bill }, onAnswer as (answer: Exit.Exit<unknown, unknown>) => void)
      },

      release: (reservation) => reservation.leaseId === undefined ? releaseAlone(reservation) : leased.release(reservation),

      renew: makeRenew(sql, lease),

      sweepExpired: sweepExpired(sql),

      receipt: (accountId, id, whileOpen = false) => {
        const read = sql<ReceiptRow>`SELECT * FROM receipts WHERE id = ${id} AND (${accountId}::text IS NULL OR account_id = ${accountId})`
        // Not written yet while its call's reservation is open: the call may have been answered by another
        // process, whose settlement is queued for a moment (BillingLive), so look again, for a while, if asked.
        // A call held from a lease has no reservation row until it is settled: while the account has a lease, look again.
        const stillOpen = sql`SELECT 1 FROM reservations WHERE id = ${id} AND status = 'open'
          AND (${accountId}::text IS NULL OR account_id = ${accountId})
          UNION ALL SELECT 1 FROM credit_leases WHERE account_id = ${accountId}`
        const found = (then: Effect.Effect<Receipt, NotFound>) =>
          Effect.flatMap(Effect.orDie(read), ([row]) => (row !== undefined ? Effect.succeed(toReceipt(row)) : then))
        const attempt = (left: number): Effect.Effect<Receipt, NotFound> =>
          found(
            left === 0 ? Effect.fail(receiptNotFound(id)) : Effect.flatMap(Effect.orDie(stillOpen), (open) =>
              open.length === 0
                // Settled between the two reads (its reservation closed with its receipt written): read once more.
                ? found(Effect.fail(receiptNotFound(id)))
                : Effect.zipRight(Effect.sleep(RECEIPT_LOOK_MILLIS), attempt(left - 1)))
          )
        return attempt(whileOpen ? RECEIPT_LOOKS : 0)
      }
    }
  })
)
