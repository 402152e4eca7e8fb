/**
 * One process's outcome numbers in 10-second buckets per deployment, as they
 * are written to the shared `deployment_stats` table. A bucket is written
 * whole (not incremented), so a flush that fails is simply repeated by the
 * next one; buckets leave memory once written and older than the window.
 */
import type { Outcome } from "../../services/Health.ts"
import { generationMs, isFallback, WINDOW_MS } from "./healthWindow.ts"
import { add, type Histogram } from "./latencyHistogram.ts"

export const BUCKET_MS = 10_000

export interface BucketTotals {
  requests: number
  failures: number
  fallbacks: number
  /** Successful outcomes only, as in the rolling window. */
  readonly latency: Histogram
  readonly ttft: Histogram
  outputTokens: number
  generationMs: number
}

interface Bucket {
  readonly deployment: string
  /** Epoch ms, a multiple of BUCKET_MS (database clock). */
  readonly start: number
  readonly totals: BucketTotals
  /** Outcomes added so far, and how many of them the table has. */
  changes: number
  written: number
}

/** A bucket's totals as of one moment, to write. */
export interface BucketSnapshot {
  readonly deployment: string
  readonly start: number
  readonly totals: BucketTotals
  readonly changes: number
}

const emptyTotals = (): BucketTotals => ({
  requests: 0,
  failures: 0,
  fallbacks: 0,
  latency: new Map(),
  ttft: new Map(),
  outputTokens: 0,
  generationMs: 0
})

const copy = (totals: BucketTotals): BucketTotals => ({
  ...totals,
  latency: new Map(totals.latency),
  ttft: new Map(totals.ttft)
})

export const makeBuckets = () => {
  const buckets = new Map<string, Bucket>()

  return {
    add: (outcome: Outcome, now: number) => {
      const start = now - (now % BUCKET_MS)
      const key = `${start} ${outcome.deployment}`
      let bucket = buckets.get(key)
      if (bucket === undefined) {
        bucket = { deployment: outcome.deployment, start, totals: emptyTotals(), changes: 0, written: 0 }
        buckets.set(key, bucket)
      }
      const { totals } = bucket
      totals.requests++
      bucket.changes++
      if (!outcome.ok) {
        totals.failures++
        return
      }
      if (isFallback(outcome)) totals.fallbacks++
      add(totals.latency, outcome.latencyMs)
      if (outcome.ttftMs !== undefined) add(totals.ttft, outcome.ttftMs)
      const ms = generationMs(outcome)
      if (ms !== undefined) {
        totals.outputTokens += outcome.outputTokens!
        totals.generationMs += ms
      }
    },

    /** Buckets with outcomes the table does not have yet. */
    unwritten: (): ReadonlyArray<BucketSnapshot> =>
      [...buckets.values()].flatMap((bucket) =>
        bucket.changes > bucket.written
          ? [{ deployment: bucket.deployment, start: bucket.start, totals: copy(bucket.totals), changes: bucket.changes }]
          : []
      ),

    /** The table now has these snapshots; forgets buckets that are written and out of the window. */
    written: (snapshots: ReadonlyArray<BucketSnapshot>, now: number) => {
      for (const snapshot of snapshots) {
        const bucket = buckets.get(`${snapshot.start} ${snapshot.deployment}`)
        if (bucket !== undefined) bucket.written = Math.max(bucket.written, snapshot.changes)
      }
      for (const [key, bucket] of buckets) {
        if (bucket.written === bucket.changes && bucket.start + BUCKET_MS <= now - WINDOW_MS) buckets.delete(key)
      }
    }
  }
}
