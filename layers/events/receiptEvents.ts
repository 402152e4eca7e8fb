/**
 * Which events a settled call's receipt row stands for on PostgreSQL
 * (`settlement_events`, migrations 0022 and 0023): its own payment and
 * receipt events always, and its routing and privacy events when they are
 * the two every call served by its first route has. Any other call event (a
 * fallback, a downgraded class) is rarer, and so is a type filter that must
 * find it: such a call stores its call events as rows, where a filter finds
 * them through an index instead of reading receipts.
 */
import type { EventType } from "../../services/EventLog.ts"
import type { CallEvent } from "../../services/Ledger.ts"

/** Read from every receipt's columns. */
const SETTLEMENT_TYPES: ReadonlyArray<EventType> = ["payment.reserved", "payment.settled", "receipt.created"]

/** Kept in a receipt's `call_events` when a call has no other. */
const KEPT_CALL_TYPES: ReadonlyArray<EventType> = ["provider.route", "privacy.class_served"]

/** The types a receipt may stand for, and so the queries that must read receipts. */
export const DERIVED_TYPES: ReadonlyArray<EventType> = [...SETTLEMENT_TYPES, ...KEPT_CALL_TYPES]

/**
 * The receipt column that must be set for a receipt to hold any event of `types`: `leased` for
 * `payment.reserved` alone, `call_events` for kept call events alone, else none. Cheaper to test
 * than reading the receipt's events.
 */
export const receiptColumnFor = (types: ReadonlyArray<EventType>): "leased" | "call_events" | undefined =>
  types.length === 0
    ? undefined
    : types.every((type) => type === "payment.reserved")
    ? "leased"
    : types.every((type) => KEPT_CALL_TYPES.includes(type))
    ? "call_events"
    : undefined

/** A receipt's events sit at `event_seq + 0..7`: three of its own, then at most five call events. */
const MOST_KEPT = 5

/** Whether a call's events are kept in its receipt (else stored as rows). */
export const keptInReceipt = (events: ReadonlyArray<CallEvent>) =>
  events.length <= MOST_KEPT && events.every((event) => KEPT_CALL_TYPES.includes(event.type))
