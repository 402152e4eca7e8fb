/**
 * Billing of one call: hold an estimate before it, then settle the hold at
 * actual usage (charge, ledger entry and receipt in one transaction) or
 * release it. A hold ends exactly once: settled, released, or, if its process
 * dies, expired by the reservation sweeper. A hold taken in a scope is
 * released when the scope closes unless it was settled first. A settlement the
 * ledger cannot write (its database is unreachable) is kept in the
 * `SettlementJournal` and written later: the call still gets its answer.
 */
import { Context, type Effect, type Fiber, type Scope } from "effect"
import type { InsufficientFunds } from "./ApiError.ts"
import type { Principal } from "./ApiKeys.ts"
import type { Deployment, Model } from "./Catalogue.ts"
import type { PrivacyClass } from "./Config.ts"
import type { Attempt, CallEvent, LineItem, Receipt, Reservation } from "./Ledger.ts"
import type { Nanos } from "./Money.ts"
import type { Estimate, TokenUsage } from "./Pricing.ts"

/**
 * Where a call puts work its answer does not wait for (the settlement's hand-over to the ledger,
 * the attempt's health, the rate limits' correction): the chat gateway calls it once the answer is
 * written (as the caller's scope closes), even for a caller that left. The work is the function
 * that does it, so work done when called (an Exit: services/atOnce.ts) takes no step then.
 */
export type AfterAnswer = (work: () => Effect.Effect<void>) => Effect.Effect<void>

/** No later: the work runs at once, in its place (agent runs, and every caller that gives none). */
export const atOnce: AfterAnswer = (work) => work()

/** Money held for a call in flight. */
export interface Hold {
  /** Also the id of the receipt the call will get. */
  readonly id: string
  readonly reservation: Reservation
  /** The key that made the call (usage by key). */
  readonly keyId: string
}

/** What a served call is billed for, before the amounts are worked out. */
export interface ServedCall {
  readonly endpoint: string
  readonly model: Model
  readonly deployment: Deployment
  /** As the upstream reported it (or as we counted it when it reported none); checked before billing. */
  readonly usage: TokenUsage
  /**
   * The usage the hold was estimated for on this model (counted input, reserved output): billed
   * instead of a reported usage that cannot be right (layers/billing/usageCheck.ts).
   */
  readonly estimated: TokenUsage
  readonly attempts: ReadonlyArray<Attempt>
  readonly privacyClass: PrivacyClass
  readonly events?: ReadonlyArray<CallEvent>
  readonly attestationVerdicts?: ReadonlyArray<string>
  /**
   * Steps of the same call billed before its model call, already costed (an agent run's query
   * embedding): the receipt lists them with the generation as line items, and charges their sum.
   */
  readonly before?: ReadonlyArray<LineItem>
}

/**
 * A settlement kept in the journal, not yet in the ledger: its amounts are what the ledger will
 * charge (what the call cost); the balance after it is not known until it is written.
 */
export interface PendingReceipt extends Omit<Receipt, "balanceAfter" | "settledAt"> {
  readonly pending: true
}

/**
 * A settlement queued for the ledger's next turn (written within milliseconds, after the answer):
 * its amounts are what the ledger will charge; this process's reads wait for it (`Billing.settled`).
 */
export interface QueuedReceipt extends Omit<Receipt, "balanceAfter" | "settledAt"> {
  readonly queued: true
}

/** What settling a hold answers: its receipt, the settlement queued, or the settlement kept for later. */
export type Settlement = Receipt | PendingReceipt | QueuedReceipt

/** Whether a settlement is still only in the journal. */
export const isPending = (settlement: Settlement): settlement is PendingReceipt => "pending" in settlement

export class Billing extends Context.Tag("svc/Billing")<Billing, {
  /**
   * The estimate for a call: `inputTokens` plus the requested output (else the default allowance,
   * never more than the context leaves) at the model's price.
   */
  readonly estimate: (model: Model, inputTokens: number, requestedOutput: number | undefined) => Estimate
  /** Holds `amount` for the caller's call until the scope closes; fails when the available balance cannot cover it. */
  readonly hold: (principal: Principal, amount: Nanos) => Effect.Effect<Hold, InsufficientFunds, Scope.Scope>
  /** Runs `use` on a hold of `amount`; a hold `use` did not settle is released when it ends, however it ends. */
  readonly withHold: <A, E, R>(
    principal: Principal,
    amount: Nanos,
    use: (hold: Hold) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | InsufficientFunds, R>
  /**
   * `withHold` for a call whose `work` (its upstream request) may start while the hold is being
   * taken, when this process last saw the account with ample balance (layers/billing/
   * holdOverlap.ts); `use` gets the hold and `work`'s result. A hold refused interrupts `work`.
   * Given `fiber`, the one the caller runs a step of now, it is made when called, in that step.
   */
  readonly withHoldDuring: <A, E, R, B, E2, R2>(
    principal: Principal,
    amount: Nanos,
    work: Effect.Effect<A, E, R>,
    use: (hold: Hold, result: A) => Effect.Effect<B, E2, R2>,
    fiber?: Fiber.RuntimeFiber<unknown, unknown>
  ) => Effect.Effect<B, E | E2 | InsufficientFunds, R | R2>
  /** `hold` with `work` alongside, as `withHoldDuring` does: the hold (for the scope) and `work`'s result. */
  readonly holdDuring: <A, E, R>(
    principal: Principal,
    amount: Nanos,
    work: Effect.Effect<A, E, R>
  ) => Effect.Effect<readonly [Hold, A], E | InsufficientFunds, R | Scope.Scope>
  /**
   * Settles the hold, charging what the call cost (even above the hold): answers at once with the
   * settlement queued for the ledger's next turn (`settled` waits for it), or, when the database
   * is known to be away, with the settlement kept in the journal. A usage the upstream reported
   * that is not a sane token count is billed as `estimated` instead, with a
   * `provider.usage_invalid` event. A hold that already ended is a defect. `recordAfter` is what
   * else the call's end writes (its transcript), given the written receipt: it runs before the
   * hold counts as ended, so `drained` waits for it too. Given `later`, a queued settlement's
   * hand-over to the ledger goes there (the answer does not wait for it); the settlement's amounts,
   * the hold's end and the call's record are settled at once either way. Given `fiber`, the one the
   * caller runs a step of now, it settles when called, in that step: a queued settlement's answer
   * is then an Exit (services/atOnce.ts).
   */
  readonly settle: (
    hold: Hold,
    call: ServedCall,
    recordAfter?: (settlement: Settlement) => Effect.Effect<void>,
    later?: AfterAnswer,
    fiber?: Fiber.RuntimeFiber<unknown, unknown>
  ) => Effect.Effect<Settlement>
  /** Releases the hold without charging (the call failed). A hold that already ended is left as it is. */
  readonly release: (hold: Hold) => Effect.Effect<void>
  /**
   * Waits until every hold taken so far has ended and its settlement or release is written (or
   * kept in the journal), with what `settle` was asked to record after it: at shutdown, so that the database closes only after the calls that were
   * cut have been billed.
   */
  readonly drained: Effect.Effect<void>
  /**
   * Waits until the settlements this process queued so far are written (or kept in the journal), a
   * second at most: a read of an account's receipts, balance or usage sees every call answered before it.
   */
  readonly settled: Effect.Effect<void>
}>() {}
