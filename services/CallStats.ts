/**
 * What every answered request of an account did — status, error code,
 * latency, time to first byte, tokens and spend — kept as a per-call record
 * and in minute and hour buckets that several processes add up, so that a
 * window of monitoring reads a few bucket rows, not every call.
 *
 * The edge opens a `CallFacts` cell per request (`currentCall`); the key
 * check names the account and key, settlement adds the tokens and spend, and
 * the edge records the call when its answer (a stream: its last byte) is sent.
 */
import { Context, type Effect, FiberRef } from "effect"
import { globalValue } from "effect/GlobalValue"
import type { Nanos } from "./Money.ts"

/** The current request's facts, filled as they become known. */
export interface CallFacts {
  accountId?: string
  keyId?: string
  inputTokens: number
  outputTokens: number
  spend: Nanos
  /** The model that served the call and its privacy class (settlement). */
  model?: string
  privacyClass?: string
  /** The contract's error code of a refused or failed call. */
  code?: string
}

export const currentCall = globalValue("svc/currentCall", () => FiberRef.unsafeMake<CallFacts | null>(null))

/** One answered request of an account. */
export interface FinishedCall {
  readonly requestId: string
  readonly accountId: string
  readonly keyId: string | undefined
  /** The path asked for (bounded). */
  readonly endpoint: string
  readonly status: number
  readonly code: string | undefined
  readonly latencyMs: number
  /** Streams: the first byte of the answer. */
  readonly ttftMs: number | undefined
  readonly inputTokens: number
  readonly outputTokens: number
  readonly spend: Nanos
  /** Epoch milliseconds when it ended (the `Clock`). */
  readonly endedAt: number
}

export interface Percentiles {
  readonly p50: number | undefined
  readonly p95: number | undefined
  readonly p99: number | undefined
}

/** One bucket of a window (a minute, or an hour for windows over 6 hours). */
export interface SeriesPoint {
  /** Epoch ms of the bucket's start. */
  readonly at: number
  readonly requests: number
  /** Answers that were not 2xx. */
  readonly errors: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly spend: Nanos
  readonly p95LatencyMs: number | undefined
}

/** An account's calls over a window, added up across processes. */
export interface CallWindow {
  /** Epoch ms of the first bucket counted (the window's start, rounded down to its bucket). */
  readonly from: number
  readonly requests: number
  /** Answers that were not 2xx, by code. */
  readonly errorsByCode: Readonly<Record<string, number>>
  readonly serverErrors: number
  readonly latencyMs: Percentiles
  readonly ttftMs: Percentiles
  readonly inputTokens: number
  readonly outputTokens: number
  readonly spend: Nanos
  /** Bucket by bucket, oldest first, from the window's first bucket to the current one. */
  readonly series: ReadonlyArray<SeriesPoint>
}

export class CallStats extends Context.Tag("svc/CallStats")<CallStats, {
  /** Counts a call (in memory; written by the next flush). It may count when called (services/atOnce.ts): call it where it is to run. */
  readonly record: (call: FinishedCall) => Effect.Effect<void>
  /** Writes what was counted since the last flush (also run periodically and at stop). */
  readonly flush: Effect.Effect<void>
  /** The account's calls of the last `windowMs`. */
  readonly window: (accountId: string, windowMs: number) => Effect.Effect<CallWindow>
}>() {}
