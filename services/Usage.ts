/**
 * What an account's calls used and cost, read from their receipts (the
 * billing record): totals for a time range, by privacy class and optionally
 * grouped by model, key or day, and the calls themselves a page at a time,
 * newest first, in the event log's order (a late commit is never passed over).
 */
import { Context, type Effect } from "effect"
import type { PrivacyClass } from "./Config.ts"
import type { Nanos } from "./Money.ts"

export const USAGE_GROUPINGS = ["model", "key", "day"] as const
export type UsageGrouping = typeof USAGE_GROUPINGS[number]

/** Where a page of calls ended: the settling transaction, then the receipt id. */
export interface UsagePosition {
  readonly xid: bigint
  readonly id: string
}

export interface UsageQuery {
  readonly accountId: string
  /** Settled at or after. */
  readonly from?: Date | undefined
  /** Settled before. */
  readonly to?: Date | undefined
  readonly groupBy?: UsageGrouping | undefined
  readonly limit: number
  /** Absent: the first page, which alone carries the totals and groups. */
  readonly after?: UsagePosition | undefined
}

export interface UsageFigures {
  readonly requests: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly spend: Nanos
}

export interface UsageCall {
  readonly receiptId: string
  readonly requestId: string
  readonly keyId: string | undefined
  readonly createdAt: Date
  readonly endpoint: string
  readonly model: string
  readonly privacyClass: PrivacyClass
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cost: Nanos
}

export interface UsageReport {
  /** First page only. */
  readonly totals?: UsageFigures & { readonly byPrivacyClass: ReadonlyArray<{ readonly privacyClass: PrivacyClass } & UsageFigures> }
  /** First page only, when grouped: biggest spend first. */
  readonly groups?: ReadonlyArray<{ readonly group: string } & UsageFigures>
  readonly calls: ReadonlyArray<UsageCall>
  readonly next: UsagePosition | null
}

export class Usage extends Context.Tag("svc/Usage")<Usage, {
  readonly report: (query: UsageQuery) => Effect.Effect<UsageReport>
}>() {}
