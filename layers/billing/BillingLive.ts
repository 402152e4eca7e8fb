/**
 * Billing on the ledger: a hold is a reservation against the caller's account
 * (for the request being served), ended exactly once — settled into a receipt,
 * or released when its scope closes first (a failed or abandoned call bills
 * nothing). Prices and estimates come from `Pricing`. The usage an upstream
 * reported is checked before it is billed (usageCheck.ts): one that cannot be
 * right is billed as the estimate held, recorded, and logged for operators. A
 * settlement the ledger fails to write is never dropped: it is kept in the
 * `SettlementJournal` (an outage logged once by `DatabaseStatus`, any other
 * failure logged as an error) and the call is answered with its pending receipt.
 *
 * One heartbeat per process renews the leases of all its open holds, in one
 * statement, every third of `billing.reservationLeaseSeconds`, so the
 * sweeper releases only the holds of processes that died, never those of
 * calls still running, however long they run. A hold leaves the beat when
 * it ends. (One beat, not a fiber and a timer per hold: those cost a call
 * more CPU than its renewal ever does.)
 */
import { Cause, Effect, Exit, FiberRef, Layer, Option } from "effect"
import { currentRequestId, type InsufficientFunds } from "../../services/ApiError.ts"
import { AppConfig } from "../../services/Config.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import { type AfterAnswer, atOnce, Billing, type Hold, type QueuedReceipt, type Settlement } from "../../services/Billing.ts"
import { type CallFacts, currentCall } from "../../services/CallStats.ts"
import { DatabaseStatus } from "../../services/DatabaseStatus.ts"
import { Ids } from "../../services/Ids.ts"
import { Metrics } from "../../services/Metrics.ts"
import { type Bill, Ledger, type Receipt, type Reservation, unsettledReceipt } from "../../services/Ledger.ts"
import type { Nanos } from "../../services/Money.ts"
import { Pricing } from "../../services/Pricing.ts"
import { alongside, makeOverlapHints } from "./holdOverlap.ts"
import { makeSettlementQueue } from "./settlementQueue.ts"
import { checkedBill } from "./servedBill.ts"
import { SettlementJournal } from "../../services/SettlementJournal.ts"
import { acquirePlainRelease } from "../../plugins/support/plainRelease.ts"
import { inFiberStep, inStage, stage, type StageFiber, stageOn } from "../telemetry/stageSpan.ts"
import { mapAtOnce, mapBothAtOnce, thenAtOnce } from "../../services/atOnce.ts"

/** The longest a read waits for the settlements queued before it (the database may be away). */
const SETTLED_WAIT_MILLIS = 1000

/** What a call records once its settlement is written (its transcript). */
type AfterSettle = ((settlement: Settlement) => Effect.Effect<void>) | undefined

/** A hold as this layer keeps it: whether it ended (a flag, not a weak set, so the GC has no extra work per call). */
interface OpenHold extends Hold {
  ended: boolean
}

export const BillingLive = Layer.scoped(
  Billing,
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const ids = yield* Ids
    const pricing = yield* Pricing
    const journal = yield* SettlementJournal
    const database = yield* DatabaseStatus
    const clock = yield* Effect.clock
    const beatMillis = Math.max(1, Math.floor(((yield* AppConfig).file.billing.reservationLeaseSeconds * 1000) / 3))
    /** Holds taken whose settlement or release is not yet written: `drained` waits for none. */
    let unfinished = 0
    const finished = Effect.sync(() => void unfinished--)
    const metrics = yield* Effect.serviceOption(Metrics)
    if (Option.isSome(metrics)) {
      metrics.value.gauge("svc_holds_open", "Holds taken in this process and not yet settled or released", [], () => [[{}, unfinished]])
    }
    const drained: Effect.Effect<void> = Effect.suspend(() =>
      unfinished === 0 ? Effect.void : Effect.zipRight(Effect.sleep("20 millis"), drained)
    )

    /** The holds the heartbeat renews: open, in this process. */
    const beating = new Set<OpenHold>()

    /** Marks a hold ended and takes it off the heartbeat; false when it already was (each hold ends once). */
    const end = (hold: Hold) => {
      const state = hold as OpenHold
      if (state.ended) return false
      state.ended = true
      beating.delete(state)
      return true
    }

    // Every open hold was taken before this beat, so none goes longer than a beat unrenewed. A renewal
    // that fails (the database is away) is tried again at the next beat; the storage layer reports the outage.
    const beat = Effect.suspend(() =>
      beating.size === 0
        ? Effect.void
        : Effect.catchAllCause(ledger.renew(Array.from(beating, (hold) => hold.reservation)), () => Effect.void)
    )
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(beatMillis), beat)))

    /** What each account was last seen to have available: whether a call may reserve alongside its request. */
    const hints = makeOverlapHints()

    /** A hold opened from the ledger's reservation: on the heartbeat until it ends. */
    const opened = (principal: Principal, reservation: Reservation): OpenHold => {
      hints.saw(reservation)
      unfinished++
      const hold: OpenHold = { id: reservation.id, reservation, keyId: principal.keyId, ended: false }
      beating.add(hold)
      return hold
    }

    /**
     * The ledger's reservation for the call running in `fiber`, as a hold: at once when the ledger
     * answers at once (a credit lease covers it), else once it has.
     */
    const reserve = (fiber: StageFiber, principal: Principal, amount: Nanos): Effect.Effect<OpenHold, InsufficientFunds> => {
      const reserving = ledger.reserve({
        // Keys of the billable scopes always belong to an account; only the operator's bootstrap key has none.
        accountId: principal.accountId!,
        requestId: fiber.getFiberRef(currentRequestId) ?? ids.make("req"),
        amount
      })
      return mapBothAtOnce(reserving, {
        onFailure: (refused) => {
          hints.refused(principal.accountId!)
          return refused
        },
        onSuccess: (made) => opened(principal, made)
      })
    }

    /** Ends the hold without a charge when it has not ended yet: does its work when called (`release` when run). */
    const releaseNow = (hold: Hold) => end(hold) ? Effect.ensuring(ledger.release(hold.reservation), finished) : Effect.void
    const release = (hold: Hold) => Effect.suspend(() => releaseNow(hold))

    /** The receipt as the ledger will write it (charging what the call cost), before it is written: balance unknown. */
    const unwritten = (reservation: Reservation, bill: Bill) =>
      unsettledReceipt(reservation, bill, bill.cost.total, new Date(clock.unsafeCurrentTimeMillis()))

    /** Kept for later in the journal: answered with the receipt as it will be written. */
    const kept = (reservation: Reservation, bill: Bill, cause: Cause.Cause<unknown>) =>
      Effect.gen(function*() {
        if (!(yield* database.observe(cause))) {
          yield* Effect.logError(`settlement of ${reservation.id} failed; kept in the journal`, cause)
        }
        yield* journal.keep({ reservation, bill })
        return Object.assign(unwritten(reservation, bill), { pending: true as const })
      })

    /** Counts what the call used and cost in its request's monitoring record, if it has one (src/http/callRecording.ts). */
    const count = (facts: CallFacts | null, settlement: Settlement) => {
      if (facts === null) return
      facts.inputTokens += settlement.usage.inputTokens
      facts.outputTokens += settlement.usage.outputTokens
      facts.spend += settlement.cost.total
      facts.model = settlement.model
      facts.privacyClass = settlement.privacyClass
    }
    const countedForMonitoring = (settlement: Settlement) =>
      Effect.map(FiberRef.get(currentCall), (facts) => count(facts, settlement))

    /** Settles now and waits for it: when the database is known to be away (the journal keeps it). */
    const written = (reservation: Reservation, bill: Bill, recordAfter: AfterSettle) =>
      ledger.settle(reservation, bill).pipe(
        Effect.catchAllCause((cause) => Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : kept(reservation, bill, cause)),
        Effect.tap((settlement) => recordAfter?.(settlement) ?? Effect.void),
        Effect.tap(countedForMonitoring),
        Effect.ensuring(finished)
      )

    // What runs after a queued settlement is written runs in this layer's runtime: a call's own adds
    // nothing to it (no log annotations of its own), and capturing it cost every call a copy of its fiber refs.
    const queue = makeSettlementQueue(yield* Effect.runtime<never>())
    const settled = queue.settledWithin(SETTLED_WAIT_MILLIS)
    /**
     * Queues the settlement for the account's next ledger turn and answers at once with its amounts
     * (the call's answer does not depend on the balance after it); what the call records after its
     * settlement runs once the receipt is written, or once it is kept in the journal.
     */
    const queued = (fiber: StageFiber, reservation: Reservation, bill: Bill, recordAfter: AfterSettle, later: AfterAnswer) => {
      const settlement: QueuedReceipt = Object.assign(unwritten(reservation, bill), { queued: true as const })
      count(fiber.getFiberRef(currentCall), settlement)
      // Tracked from now: `settled` and `drained` wait for it even before it is handed over.
      const tracked = queue.track(afterWrite(reservation, bill, recordAfter))
      return mapAtOnce(later(() => ledger.settleQueued(reservation, bill, tracked)), (): Settlement => settlement)
    }
    /**
     * What runs once a queued settlement is written (or kept in the journal). Made apart from `queued`
     * so that it holds only these three until the account's statement answers: a closure made there
     * would share its scope, and with it `later`, which holds the whole call (its request, route and
     * answer), kept alive past the young generation's collections (docs/performance.md, item 77).
     */
    const afterWrite = (reservation: Reservation, bill: Bill, recordAfter: AfterSettle) => (answer: Exit.Exit<Receipt>) => {
      // Written, and nothing to record after it: the hold has ended, with no fiber to run.
      if (Exit.isSuccess(answer) && recordAfter === undefined) return void unfinished--
      return Effect.flatMap(
        Exit.isSuccess(answer) ? Effect.succeed<Settlement>(answer.value) : kept(reservation, bill, answer.cause),
        (written) => recordAfter?.(written) ?? Effect.void
      ).pipe(Effect.ensuring(finished))
    }

    const hold = (principal: Principal, amount: Nanos) =>
      acquirePlainRelease(stage("svc.billing.hold", (fiber) => reserve(fiber, principal, amount)), release)
    /**
     * `use` of a hold, released however `use` ends: one step of the call's fiber for a hold made at
     * once (`Effect.acquireUseRelease` takes a dozen), and no scope object.
     */
    const withHold = <A, E, R>(
      principal: Principal,
      amount: Nanos,
      use: (hold: Hold) => Effect.Effect<A, E, R>,
      given?: StageFiber
    ) =>
      Effect.uninterruptibleMask((restore) => {
        const heldIn = (fiber: StageFiber): Effect.Effect<A, E | InsufficientFunds, R> =>
          thenAtOnce(inStage(fiber, "svc.billing.hold", () => reserve(fiber, principal, amount)), (held) =>
            Effect.matchCauseEffect(restore(use(held)), {
              // As `acquireUseRelease` ends: a release that fails too adds its cause to the call's.
              onFailure: (cause) =>
                Effect.flatMap(Effect.exit(releaseNow(held)), (released) =>
                  Exit.failCause(Exit.isFailure(released) ? Cause.sequential(cause, released.cause) : cause)),
              onSuccess: (value) => mapAtOnce(releaseNow(held), () => value)
            }))
        return inFiberStep(given, heldIn)
      })

    /**
     * `held`, given `work`'s outcome to wait on: `work` runs alongside when the account was seen with
     * ample balance, else after the hold. A hold the ledger makes at once (from a credit lease) has
     * nothing to overlap: then no fiber for `work` either.
     */
    const during = <A, E, R, B, E2, R2>(
      principal: Principal,
      amount: Nanos,
      work: Effect.Effect<A, E, R>,
      held: (outcome: Effect.Effect<A, E, R>) => Effect.Effect<B, E2, R2>,
      madeNow = false
    ) => {
      const made = () =>
        ledger.reservesAtOnce?.(principal.accountId!, amount) !== true && hints.claim(principal.accountId!, amount)
          ? alongside(work, held)
          : held(work)
      return madeNow ? made() : Effect.suspend(made)
    }

    /** Queued for the ledger's next turn, or written now when the database is known to be away (the journal keeps it). */
    const settledBy = (fiber: StageFiber, held: Hold, bill: Bill, recordAfter: AfterSettle, later: AfterAnswer) =>
      database.isUp() ? queued(fiber, held.reservation, bill, recordAfter, later) : written(held.reservation, bill, recordAfter)

    return Billing.of({
      estimate: pricing.estimateFor,
      hold,
      withHold,
      withHoldDuring: (principal, amount, work, use, fiber) =>
        during(principal, amount, work, (outcome) =>
          withHold(principal, amount, (hold) => Effect.flatMap(outcome, (result) => use(hold, result)), fiber), fiber !== undefined),
      holdDuring: (principal, amount, work) =>
        during(principal, amount, work, (outcome) =>
          Effect.flatMap(hold(principal, amount), (held) => Effect.map(outcome, (result) => [held, result] as const))),
      settle: (held, call, recordAfter, later = atOnce, fiber) => {
        // One step of the call's fiber when the settlement is queued (none of its own, given the fiber
        // the caller runs in): this runs on every billed call.
        const settling = (fiber: StageFiber): Effect.Effect<Settlement> => {
          if (!end(held)) return Effect.dieMessage(`hold ${held.id} settled after it ended`)
          // The bill made at once: an Effect of its own only for the rare warning.
          const { bill, warning } = checkedBill(pricing, call, held.keyId)
          if (warning === undefined) return settledBy(fiber, held, bill, recordAfter, later)
          return Effect.zipRight(warning, Effect.suspend(() => settledBy(fiber, held, bill, recordAfter, later)))
        }
        return stageOn(fiber, "svc.billing.settle", settling)
      },
      release,
      drained,
      settled
    })
  })
)
