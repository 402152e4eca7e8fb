/**
 * The audit event log behind `GET /v1/logs`: account, routing, payment,
 * receipt and privacy events. Recording inside a transaction joins it.
 */
import { Context, type Effect } from "effect"

export type EventType =
  | "account.created"
  | "key.created"
  | "key.revoked"
  | "payment.credit_added"
  | "payment.reserved"
  | "payment.settled"
  | "payment.released"
  | "payment.insufficient_funds"
  | "payment.overage"
  | "receipt.created"
  | "provider.route"
  | "provider.fallback"
  | "provider.usage_invalid"
  | "privacy.class_served"
  | "privacy.downgraded"
  | "privacy.rejected"
  | "agent.created"
  | "agent.deleted"
  | "agent.document_added"
  | "agent.document_deleted"

export interface NewEvent {
  readonly type: EventType
  readonly accountId: string | null
  readonly requestId?: string | undefined
  readonly receiptId?: string | undefined
  /** Never prompt or completion text. */
  readonly data: Readonly<Record<string, unknown>>
}

export class EventLog extends Context.Tag("svc/EventLog")<EventLog, {
  readonly record: (event: NewEvent) => Effect.Effect<void>
}>() {}
