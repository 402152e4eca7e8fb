/**
 * The audit event log behind `GET /v1/logs`: account, routing, payment,
 * receipt, privacy and agent events (docs/events.md lists each type's data).
 * Recording inside a transaction joins it. Reading pages newest first by a
 * position that no later commit can fall behind (layers/events/eventPages.ts).
 */
import { Context, type Effect } from "effect"

/** Every event type (docs/events.md: what each one's data holds). */
export const EVENT_TYPES = [
  "account.created",
  "key.created",
  "key.revoked",
  "payment.credit_added",
  "payment.reserved",
  "payment.settled",
  "payment.released",
  "payment.insufficient_funds",
  "payment.overage",
  "receipt.created",
  "provider.route",
  "provider.fallback",
  "provider.usage_invalid",
  "privacy.class_served",
  "privacy.downgraded",
  "privacy.rejected",
  "rate_limit.refused",
  "agent.created",
  "agent.deleted",
  "agent.document_added",
  "agent.document_deleted"
] as const
export type EventType = typeof EVENT_TYPES[number]

export interface NewEvent {
  readonly type: EventType
  readonly accountId: string | null
  readonly requestId?: string | undefined
  readonly receiptId?: string | undefined
  /** Never prompt or completion text. */
  readonly data: Readonly<Record<string, unknown>>
}

/** The event categories (the part of a type before its dot), for prefix filters like `payment.`. */
export const EVENT_CATEGORIES = ["account", "key", "payment", "receipt", "provider", "privacy", "rate_limit", "agent"] as const
export type EventCategory = typeof EVENT_CATEGORIES[number]

/** Where a page of events ended: the writing transaction, then the order within it. */
export interface EventPosition {
  readonly xid: bigint
  readonly seq: bigint
}

export interface EventQuery {
  readonly accountId: string
  /** One type, or every type of a category. */
  readonly type?: { readonly exact: EventType } | { readonly category: EventCategory } | undefined
  readonly receiptId?: string | undefined
  /** Created at or after. */
  readonly from?: Date | undefined
  /** Created before. */
  readonly to?: Date | undefined
  readonly limit: number
  /** Absent: the newest page. */
  readonly after?: EventPosition | undefined
}

export interface StoredEvent extends NewEvent {
  readonly id: string
  readonly createdAt: Date
  readonly position: EventPosition
}

export interface EventPage {
  readonly items: ReadonlyArray<StoredEvent>
  /** Where the next (older) page starts; null on the last. */
  readonly next: EventPosition | null
}

export class EventLog extends Context.Tag("svc/EventLog")<EventLog, {
  readonly record: (event: NewEvent) => Effect.Effect<void>
  /** A page of an account's events, newest first. */
  readonly list: (query: EventQuery) => Effect.Effect<EventPage>
}>() {}
