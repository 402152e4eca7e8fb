/**
 * Paying for calls from the prepaid balance. Before a call an estimate is
 * reserved atomically against what is available (balance − open
 * reservations); after it, the reservation is settled at actual usage — the
 * charge, the ledger entry and the receipt in one transaction — or released.
 *
 * Rule for usage above the estimate: the receipt charges what the call cost.
 * The excess over what was held is recorded as a `payment.overage` event, and
 * the balance may go below zero by that excess only (a reservation is never
 * admitted unless the available balance covers it, so a negative balance
 * admits nothing until it is credited). The sum of an account's receipts
 * always equals the drop in its balance.
 *
 * A bill that cannot be written (token figures that are not non-negative
 * integers below 2³¹, amounts out of range) is a defect of that settlement
 * alone: other calls settled with it are unaffected. Billing checks an
 * upstream's usage before it makes the bill (layers/billing/usageCheck.ts).
 */
import { Context, Effect, type Exit, type Types } from "effect"
import type { InsufficientFunds, NotFound } from "./ApiError.ts"
import type { Tier } from "./Catalogue.ts"
import type { PrivacyClass } from "./Config.ts"
import type { EventType } from "./EventLog.ts"
import type { Nanos } from "./Money.ts"
import type { Cost, TokenUsage } from "./Pricing.ts"

export interface Reservation {
  /** Also the id of the receipt the call will get. */
  readonly id: string
  readonly accountId: string
  readonly requestId: string
  readonly amount: Nanos
  readonly reservedAt: Date
  /**
   * What the account had available (balance − open reservations) right after this reservation,
   * as the reservation saw it; a hint for the next call (Billing's overlap), never kept.
   */
  readonly availableAfter?: Nanos
  /**
   * Held from this process's credit lease on the account (layers/billing/creditLeases.ts), with no
   * statement: its reservation row is written when it is settled or released.
   */
  readonly leaseId?: string
}

export interface Attempt {
  readonly model: string
  readonly outcome: "ok" | "error" | "timeout"
  readonly latencyMs: number
  /** The deployment tried: operators only, never shown on a receipt. */
  readonly deployment?: string
  /** What went wrong, naming no provider. */
  readonly failure?: string
}

/** An event written with the receipt, in the same statement (routing and privacy events of the call). */
export interface CallEvent {
  readonly type: EventType
  readonly data: Readonly<Record<string, unknown>>
}

/**
 * One billable step of a call that has several (an agent run: the query's embedding, then the
 * generation): what it used and what it cost. The bill's cost is their sum.
 */
export interface LineItem {
  readonly step: "query_embedding" | "generation"
  readonly model: string
  readonly usage: TokenUsage
  readonly cost: Cost
}

/** What a finished call is billed for. */
export interface Bill {
  readonly endpoint: string
  readonly model: string
  readonly tier: Tier
  readonly privacyClass: PrivacyClass
  readonly usage: TokenUsage
  readonly price: { readonly input: Nanos; readonly output: Nanos | undefined }
  readonly cost: Cost
  readonly attempts: ReadonlyArray<Attempt>
  /** Operators only; never shown to the account. */
  readonly providerId: string
  /** Recorded with the receipt; they name no provider. */
  readonly events?: ReadonlyArray<CallEvent>
  /** Confidential calls: the attestation verdicts the call was served under. */
  readonly attestationVerdicts?: ReadonlyArray<string>
  /** A call of several billable steps: each of them, in order (`cost` is their sum; `model` and `usage` the generation's). */
  readonly lineItems?: ReadonlyArray<LineItem>
  /** The key that made the call (absent in journal lines kept before keys were recorded). */
  readonly keyId?: string | undefined
}

/** The settled record of one call: its bill as charged, without operator-only facts. */
export interface Receipt extends Omit<Bill, "providerId" | "events"> {
  readonly id: string
  readonly accountId: string
  readonly requestId: string
  readonly createdAt: Date
  readonly estimated: Nanos
  readonly reservedAt: Date
  readonly settledAt: Date
  readonly balanceAfter: Nanos
}

export class Ledger extends Context.Tag("svc/Ledger")<Ledger, {
  /**
   * Holds `amount` for a call, or fails when the available balance cannot cover it (an event is
   * recorded). It may reserve when called, from what this process holds (services/atOnce.ts): call
   * it where it is to run.
   */
  readonly reserve: (input: {
    readonly accountId: string
    readonly requestId: string
    readonly amount: Nanos
  }) => Effect.Effect<Reservation, InsufficientFunds>
  /**
   * Whether `reserve` would answer `amount` for the account at once, in this process (a credit
   * lease covers it), with no statement to wait for; absent, a reservation may wait.
   */
  readonly reservesAtOnce?: (accountId: string, amount: Nanos) => boolean
  /**
   * Charges the call its bill (above the reservation too: an overage), writes its ledger entry
   * and receipt, and frees the rest of the reservation. A bill that cannot be written is a defect.
   */
  readonly settle: (reservation: Reservation, bill: Bill) => Effect.Effect<Receipt>
  /**
   * `settle` without waiting: the settlement goes with the account's next ledger turn in this
   * process (the next call's reservation), or alone shortly after; `onAnswer` gets its receipt or
   * its failure, and must not block. It may queue when called (services/atOnce.ts): call it where
   * it is to run.
   */
  readonly settleQueued: (reservation: Reservation, bill: Bill, onAnswer: (answer: Exit.Exit<Receipt>) => void) => Effect.Effect<void>
  /** Frees a reservation without charging (the call failed). Releasing twice is harmless. */
  readonly release: (reservation: Reservation) => Effect.Effect<void>
  /**
   * Restarts the leases of reservations still open (their calls are still running: the heartbeat),
   * so the sweeper leaves them alone; a reservation that ended is left as it is.
   */
  readonly renew: (reservations: ReadonlyArray<Reservation>) => Effect.Effect<void>
  /**
   * Releases reservations whose lease ran out (their process died), except those in `kept` (their
   * settlement is kept in this process's journal); returns how many.
   */
  readonly sweepExpired: (kept?: ReadonlyArray<string>) => Effect.Effect<number>
  /**
   * A receipt of the account; `null`: of any account (an operator's read). With `whileOpen`, a
   * receipt not written yet while its reservation is open is looked for again for a moment (its
   * call may have been answered by another process, whose settlement is still queued).
   */
  readonly receipt: (accountId: string | null, id: string, whileOpen?: boolean) => Effect.Effect<Receipt, NotFound>
}>() {}

/** What a receipt says before its settlement is written (no balance after it, no time of settlement). */
export type UnsettledReceipt = Omit<Receipt, "balanceAfter" | "settledAt">

/**
 * A receipt's fields that do not wait for its settlement: its bill as charged (`total`); the margin
 * is what is left of it after the upstream cost. The optional ones are set, not spread: a spread
 * of a conditional object per field copies the receipt's properties one by one (docs/performance.md).
 */
export const unsettledReceipt = (reservation: Reservation, bill: Bill, total: Nanos, createdAt: Date): UnsettledReceipt => {
  const receipt: Types.Mutable<UnsettledReceipt> = {
    id: reservation.id,
    accountId: reservation.accountId,
    requestId: reservation.requestId,
    createdAt,
    endpoint: bill.endpoint,
    model: bill.model,
    tier: bill.tier,
    privacyClass: bill.privacyClass,
    usage: bill.usage,
    price: bill.price,
    cost: { upstream: bill.cost.upstream, margin: total - bill.cost.upstream, total },
    estimated: reservation.amount,
    reservedAt: reservation.reservedAt,
    attempts: bill.attempts
  }
  if (bill.attestationVerdicts !== undefined) receipt.attestationVerdicts = bill.attestationVerdicts
  if (bill.lineItems !== undefined) receipt.lineItems = bill.lineItems
  if (bill.keyId !== undefined) receipt.keyId = bill.keyId
  return receipt
}

/** The receipt of a settled call. */
export const receiptOf = (
  reservation: Reservation,
  bill: Bill,
  settled: { readonly total: Nanos; readonly balanceAfter: Nanos; readonly createdAt: Date; readonly settledAt: Date }
): Receipt => {
  const receipt = unsettledReceipt(reservation, bill, settled.total, settled.createdAt) as Types.Mutable<Receipt>
  receipt.settledAt = settled.settledAt
  receipt.balanceAfter = settled.balanceAfter
  return receipt
}

/** `settleQueued` for a ledger with nothing to batch: settles at once, then answers. */
export const settlingAtOnce =
  (settle: Ledger["Type"]["settle"]): Ledger["Type"]["settleQueued"] => (reservation, bill, onAnswer) =>
    Effect.flatMap(Effect.exit(settle(reservation, bill)), (answer) => Effect.sync(() => onAnswer(answer)))
