/**
 * One process's calls per account in minute and hour buckets, as they are
 * written to the shared `call_stats` table: a bucket is written whole (not
 * incremented), keyed by this process, so a flush that fails is simply
 * repeated by the next; buckets leave memory once written and closed.
 */
import type { FinishedCall } from "../../services/CallStats.ts"
import { formatUsd } from "../../services/Money.ts"
import { add, type Histogram, toJson } from "../health/latencyHistogram.ts"

export const MINUTE_MS = 60_000
export const HOUR_MS = 3_600_000
export type Granularity = "minute" | "hour"
const SPAN: Record<Granularity, number> = { minute: MINUTE_MS, hour: HOUR_MS }

export interface BucketTotals {
  requests: number
  serverErrors: number
  readonly errors: Map<string, number>
  readonly latency: Histogram
  readonly ttft: Histogram
  inputTokens: number
  outputTokens: number
  spend: bigint
}

interface Bucket {
  readonly accountId: string
  readonly granularity: Granularity
  /** Epoch ms, a multiple of the granularity's span. */
  readonly start: number
  readonly totals: BucketTotals
  changes: number
  written: number
}

/** A bucket as one row of `call_stats`. */
export interface BucketRow {
  readonly account_id: string
  readonly granularity: Granularity
  readonly bucket_ms: number
  readonly requests: number
  readonly server_errors: number
  readonly errors: Record<string, number>
  readonly latency: Record<string, number>
  readonly ttft: Record<string, number>
  readonly input_tokens: number
  readonly output_tokens: number
  readonly spend: string
}

const emptyTotals = (): BucketTotals => ({
  requests: 0,
  serverErrors: 0,
  errors: new Map(),
  latency: new Map(),
  ttft: new Map(),
  inputTokens: 0,
  outputTokens: 0,
  spend: 0n
})

export const makeCallBuckets = () => {
  const buckets = new Map<string, Bucket>()
  /** The bucket of each granularity counted last: a busy account's next call, with no key to build and look up. */
  const last: Record<Granularity, Bucket | undefined> = { minute: undefined, hour: undefined }

  const bucketFor = (accountId: string, granularity: Granularity, at: number) => {
    const start = at - (at % SPAN[granularity])
    const previous = last[granularity]
    if (previous !== undefined && previous.start === start && previous.accountId === accountId) return previous
    const key = `${accountId}|${granularity}|${start}`
    let bucket = buckets.get(key)
    if (bucket === undefined) {
      bucket = { accountId, granularity, start, totals: emptyTotals(), changes: 0, written: 0 }
      buckets.set(key, bucket)
    }
    return last[granularity] = bucket
  }

  const count = (bucket: Bucket, call: FinishedCall) => {
    const totals = bucket.totals
    totals.requests++
    if (call.status >= 500) totals.serverErrors++
    if (call.status >= 400) {
      const code = call.code ?? String(call.status)
      totals.errors.set(code, (totals.errors.get(code) ?? 0) + 1)
    }
    add(totals.latency, call.latencyMs)
    if (call.ttftMs !== undefined) add(totals.ttft, call.ttftMs)
    totals.inputTokens += call.inputTokens
    totals.outputTokens += call.outputTokens
    totals.spend += call.spend
    bucket.changes++
  }

  return {
    add: (call: FinishedCall) => {
      count(bucketFor(call.accountId, "minute", call.endedAt), call)
      count(bucketFor(call.accountId, "hour", call.endedAt), call)
    },

    /** The rows of every bucket changed since it was last written, and how to mark them written. */
    changed: () => {
      const dirty = [...buckets.values()].filter((bucket) => bucket.changes > bucket.written)
      const marks = dirty.map((bucket) => [bucket, bucket.changes] as const)
      const rows = dirty.map((bucket): BucketRow => ({
        account_id: bucket.accountId,
        granularity: bucket.granularity,
        bucket_ms: bucket.start,
        requests: bucket.totals.requests,
        server_errors: bucket.totals.serverErrors,
        errors: Object.fromEntries(bucket.totals.errors),
        latency: toJson(bucket.totals.latency),
        ttft: toJson(bucket.totals.ttft),
        input_tokens: bucket.totals.inputTokens,
        output_tokens: bucket.totals.outputTokens,
        spend: formatUsd(bucket.totals.spend)
      }))
      return {
        rows,
        /** After the rows were written: forget the buckets that are closed and fully written. */
        written: (now: number) => {
          for (const [bucket, changes] of marks) bucket.written = Math.max(bucket.written, changes)
          for (const [key, bucket] of buckets) {
            const closed = bucket.start + SPAN[bucket.granularity] <= now
            if (!closed || bucket.written !== bucket.changes) continue
            buckets.delete(key)
            if (last[bucket.granularity] === bucket) last[bucket.granularity] = undefined
          }
        }
      }
    }
  }
}
