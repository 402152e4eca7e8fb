/**
 * The cluster's deployment health from the shared tables: the breaker rows,
 * and the `deployment_stats` buckets of the last five minutes of every
 * process, added up (histograms merge by adding counts).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import type { DeploymentHealth } from "../../services/Health.ts"
import { type ClusterHealth, HealthReport, type MergedNumbers } from "../../services/HealthReport.ts"
import { type BreakerRow, readBreakers, stateAt } from "./breakerRows.ts"
import { WINDOW_MS } from "./healthWindow.ts"
import { type Histogram, mergeInto, quantile } from "./latencyHistogram.ts"

interface Numbers {
  requests: number
  failures: number
  fallbacks: number
  outputTokens: number
  generationMs: number
  readonly latency: Histogram
  readonly ttft: Histogram
}

const none = (): Numbers => ({
  requests: 0,
  failures: 0,
  fallbacks: 0,
  outputTokens: 0,
  generationMs: 0,
  latency: new Map(),
  ttft: new Map()
})

const addInto = (into: Numbers, from: Numbers) => {
  into.requests += from.requests
  into.failures += from.failures
  into.fallbacks += from.fallbacks
  into.outputTokens += from.outputTokens
  into.generationMs += from.generationMs
  mergeInto(into.latency, from.latency)
  mergeInto(into.ttft, from.ttft)
}

const summarise = (numbers: Numbers): MergedNumbers => ({
  requests: numbers.requests,
  failures: numbers.failures,
  fallbacks: numbers.fallbacks,
  p50LatencyMs: quantile(numbers.latency, 0.5),
  p95LatencyMs: quantile(numbers.latency, 0.95),
  p50TtftMs: quantile(numbers.ttft, 0.5),
  tokensPerSecond: numbers.generationMs > 0 ? (numbers.outputTokens * 1000) / numbers.generationMs : undefined
})

const WINDOW_SECONDS = WINDOW_MS / 1000

export const HealthReportPg = Layer.effect(
  HealthReport,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const totals = sql<{
      readonly deployment: string
      readonly requests: number
      readonly failures: number
      readonly fallbacks: number
      readonly output_tokens: number
      readonly generation_ms: number
    }>`
      SELECT deployment, sum(requests)::int AS requests, sum(failures)::int AS failures,
             sum(fallbacks)::int AS fallbacks, sum(output_tokens)::float8 AS output_tokens,
             sum(generation_ms)::float8 AS generation_ms
      FROM deployment_stats
      WHERE bucket > now() - make_interval(secs => ${WINDOW_SECONDS}::int)
      GROUP BY deployment`

    const cells = sql<{
      readonly deployment: string
      readonly kind: "latency" | "ttft"
      readonly bucket: number
      readonly count: number
    }>`
      SELECT s.deployment, 'latency' AS kind, h.key::int AS bucket, sum(h.value::int)::int AS count
      FROM deployment_stats AS s, jsonb_each_text(s.latency_histogram) AS h
      WHERE s.bucket > now() - make_interval(secs => ${WINDOW_SECONDS}::int)
      GROUP BY s.deployment, h.key
      UNION ALL
      SELECT s.deployment, 'ttft' AS kind, h.key::int AS bucket, sum(h.value::int)::int AS count
      FROM deployment_stats AS s, jsonb_each_text(s.ttft_histogram) AS h
      WHERE s.bucket > now() - make_interval(secs => ${WINDOW_SECONDS}::int)
      GROUP BY s.deployment, h.key`

    const snapshot = Effect.gen(function*() {
      const [breakers, totalRows, cellRows] = yield* Effect.all([readBreakers(sql), totals, cells], {
        concurrency: "unbounded"
      })
      const rows = new Map<string, BreakerRow>(breakers.rows.map((row) => [row.deployment, row]))
      const numbers = new Map<string, Numbers>()
      const numbersOf = (deployment: string) => {
        let entry = numbers.get(deployment)
        if (entry === undefined) numbers.set(deployment, entry = none())
        return entry
      }
      for (const row of totalRows) {
        addInto(numbersOf(row.deployment), {
          ...none(),
          requests: row.requests,
          failures: row.failures,
          fallbacks: row.fallbacks,
          outputTokens: row.output_tokens,
          generationMs: row.generation_ms
        })
      }
      for (const cell of cellRows) numbersOf(cell.deployment)[cell.kind].set(cell.bucket, cell.count)

      const combined = (ids: ReadonlyArray<string>) => {
        const sum = none()
        for (const id of new Set(ids)) {
          const entry = numbers.get(id)
          if (entry !== undefined) addInto(sum, entry)
        }
        return summarise(sum)
      }

      const deployment = (id: string): DeploymentHealth => {
        const row = rows.get(id)
        const state = stateAt(row, breakers.now)
        return {
          deployment: id,
          state,
          consecutiveFailures: row?.consecutiveFailures ?? 0,
          ...combined([id]),
          retryAt: state === "open" && row?.retryAt != null ? new Date(row.retryAt) : undefined
        }
      }
      return { deployment, combined } satisfies ClusterHealth
    }).pipe(Effect.orDie)

    return { snapshot }
  })
)
