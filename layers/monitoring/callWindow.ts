/**
 * A window of an account's calls from its bucket rows (every process's, any
 * order): the totals, percentiles from the merged histograms, and a series
 * with one point per bucket from the window's first to the current one,
 * empty buckets included, for charts.
 */
import type { CallWindow, SeriesPoint } from "../../services/CallStats.ts"
import { fromNumericColumn } from "../../services/Money.ts"
import type { BucketRow } from "./callBuckets.ts"
import { fromJson, type Histogram, mergeInto, quantile } from "../health/latencyHistogram.ts"

/** A bucket row as read back (the same columns as written; bigint and numeric come back as text). */
export type StatsRow = Omit<BucketRow, "account_id" | "granularity" | "input_tokens" | "output_tokens"> & {
  readonly input_tokens: string
  readonly output_tokens: string
}

const percentiles = (histogram: Histogram) => ({
  p50: quantile(histogram, 0.5),
  p95: quantile(histogram, 0.95),
  p99: quantile(histogram, 0.99)
})

interface Point {
  requests: number
  errors: number
  serverErrors: number
  inputTokens: number
  outputTokens: number
  spend: bigint
  readonly latency: Histogram
}

const emptyPoint = (): Point => ({
  requests: 0,
  errors: 0,
  serverErrors: 0,
  inputTokens: 0,
  outputTokens: 0,
  spend: 0n,
  latency: new Map()
})

/** `from` and `until`: the first and the current bucket's starts; `span`: a bucket's length (ms). */
export const callWindow = (rows: ReadonlyArray<StatsRow>, from: number, until: number, span: number): CallWindow => {
  const points = new Map<number, Point>()
  for (let at = from; at <= until; at += span) points.set(at, emptyPoint())
  const latency: Histogram = new Map()
  const ttft: Histogram = new Map()
  const errorsByCode: Record<string, number> = {}
  const total = emptyPoint()
  for (const row of rows) {
    const point = points.get(row.bucket_ms) ?? emptyPoint()
    const errors = Object.values(row.errors).reduce((sum, count) => sum + count, 0)
    for (const into of [point, total]) {
      into.requests += row.requests
      into.errors += errors
      into.serverErrors += row.server_errors
      into.inputTokens += Number(row.input_tokens)
      into.outputTokens += Number(row.output_tokens)
      into.spend += fromNumericColumn(row.spend)
    }
    const histogram = fromJson(row.latency)
    mergeInto(point.latency, histogram)
    mergeInto(latency, histogram)
    mergeInto(ttft, fromJson(row.ttft))
    for (const [code, count] of Object.entries(row.errors)) errorsByCode[code] = (errorsByCode[code] ?? 0) + count
  }
  const series = [...points].map(([at, point]): SeriesPoint => ({
    at,
    requests: point.requests,
    errors: point.errors,
    inputTokens: point.inputTokens,
    outputTokens: point.outputTokens,
    spend: point.spend,
    p95LatencyMs: quantile(point.latency, 0.95)
  }))
  return {
    from,
    requests: total.requests,
    errorsByCode,
    serverErrors: total.serverErrors,
    latencyMs: percentiles(latency),
    ttftMs: percentiles(ttft),
    inputTokens: total.inputTokens,
    outputTokens: total.outputTokens,
    spend: total.spend,
    series
  }
}
