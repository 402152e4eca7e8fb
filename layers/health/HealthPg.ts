/**
 * Deployment health, shared by the gateway processes through PostgreSQL. A
 * database outage costs the shared news, never a call, and is logged once by
 * `DatabaseStatus`, not here.
 *
 * In memory, per process: each deployment's rolling window of outcomes, and
 * the last known row of the shared breaker table. `view` and, except at a
 * half-open probe, `admits` answer from memory.
 *
 * Shared: the `deployment_breakers` row of a deployment is written only when
 * its breaker has news — a failure, the first success after failures, a
 * `Retry-After` cooldown, a claimed probe — each as one atomic statement, so
 * processes racing on one row compose. A healthy deployment's success writes
 * nothing (it is the hot path). Every `syncMillis` a background fiber re-reads
 * the whole table, so what one process learned reaches the others within
 * about that long. Every `statsFlushMillis` another writes this process's
 * 10-second buckets of numbers to `deployment_stats`, which
 * `GET /v1/providers/health` merges (layers/health/HealthReportPg.ts).
 *
 * Times in the shared rows are the database's clock; each sync measures this
 * process's offset from it.
 */
import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Option, Schedule } from "effect"
import { warnUnlessOutage } from "../../services/DatabaseStatus.ts"
import { Metrics } from "../../services/Metrics.ts"
import { AppConfig } from "../../services/Config.ts"
import { type BreakerState, type DeploymentHealth, Health } from "../../services/Health.ts"
import { BREAKER_COLUMNS, type BreakerColumns, type BreakerRow, fromColumns, newer, readBreakers, stateAt, viewOf } from "./breakerRows.ts"
import { makeBuckets } from "./healthBuckets.ts"
import { makeWindow, type RollingWindow, type WindowStats } from "./healthWindow.ts"
import { toJson } from "./latencyHistogram.ts"

/**
 * How long a claimed half-open probe keeps other callers out. If its caller never reports (it
 * died, or the upstream refused the request as the caller's fault), the next caller probes after this.
 */
export const PROBE_LEASE_SECONDS = 30

/** Stats buckets older than this are deleted (the window is five minutes; a margin for slow clocks). */
const STATS_KEEP_MINUTES = 15

const NOTHING_MEASURED: WindowStats = {
  requests: 0,
  failures: 0,
  fallbacks: 0,
  p50LatencyMs: undefined,
  p95LatencyMs: undefined,
  p50TtftMs: undefined,
  tokensPerSecond: undefined
}

export const HealthPg = Layer.scoped(
  Health,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const settings = (yield* AppConfig).file.routing.health
    const threshold = settings.failureThreshold
    const baseCooldown = settings.cooldownSeconds
    const maxCooldown = Math.max(settings.maxCooldownSeconds, baseCooldown)
    // Names this process's rows in the stats table; random so that restarts and test gateways differ.
    const instance = `${hostname()}/${process.pid}/${randomBytes(6).toString("hex")}`

    const breakers = new Map<string, BreakerRow>()
    const windows = new Map<string, RollingWindow>()
    const metrics = yield* Effect.serviceOption(Metrics)
    if (Option.isSome(metrics)) {
      const CODE: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 }
      metrics.value.gauge(
        "svc_circuit_state",
        "Each deployment's breaker as this process knows it: 0 closed, 1 half-open, 2 open",
        ["deployment"],
        () => [...breakers.values()].map((row) => [{ deployment: row.deployment }, CODE[stateAt(row, now())]] as const)
      )
    }
    const buckets = makeBuckets()
    /** Half-open deployments this process is asking the table for the probe of: one question at a time. */
    const claiming = new Set<string>()
    /** The database clock minus this process's clock. */
    let clockOffset = 0
    // Read synchronously (`view` is not an effect), through the Clock service so a TestClock drives it.
    const clock = yield* Effect.clock
    const now = () => clock.unsafeCurrentTimeMillis() + clockOffset

    const learn = (rows: ReadonlyArray<BreakerColumns>) => {
      for (const row of rows.map(fromColumns)) {
        if (newer(breakers.get(row.deployment), row)) breakers.set(row.deployment, row)
      }
    }

    const columns = sql.literal(BREAKER_COLUMNS)

    /** A shared write; a database outage costs the news, not the caller's call. */
    const write = (statement: Effect.Effect<ReadonlyArray<BreakerColumns>, unknown>) =>
      statement.pipe(
        Effect.tap((rows) => Effect.sync(() => learn(rows))),
        Effect.asVoid,
        Effect.catchAllCause(warnUnlessOutage("deployment health: breaker write failed"))
      )

    /**
     * One failure, decided in the row under its lock: count it; open at the threshold for the base
     * cooldown; a failure while half-open (the probe, or any call after the cooldown) reopens for
     * twice the last cooldown, up to the maximum; a `Retry-After` opens at once and never shortens.
     */
    const failed = (deployment: string, retryAfter: number | null) =>
      sql<BreakerColumns>`
        UPDATE deployment_breakers AS b SET
          consecutive_failures = b.consecutive_failures + 1,
          state = CASE
            WHEN b.state <> 'closed' OR b.consecutive_failures + 1 >= ${threshold}::int OR ${retryAfter}::float8 IS NOT NULL
            THEN 'open' ELSE 'closed' END,
          cooldown_seconds = CASE
            WHEN b.state <> 'closed' AND b.retry_at <= now() THEN least(greatest(b.cooldown_seconds * 2, ${baseCooldown}::int), ${maxCooldown}::int)
            WHEN b.state = 'closed' AND b.consecutive_failures + 1 >= ${threshold}::int THEN ${baseCooldown}::int
            ELSE b.cooldown_seconds END,
          retry_at = CASE
            WHEN b.state <> 'closed' AND b.retry_at <= now() THEN now() + make_interval(secs => greatest(
              least(greatest(b.cooldown_seconds * 2, ${baseCooldown}::int), ${maxCooldown}::int), coalesce(${retryAfter}::float8, 0)))
            WHEN b.state <> 'closed' THEN greatest(b.retry_at, now() + make_interval(secs => coalesce(${retryAfter}::float8, 0)))
            WHEN b.consecutive_failures + 1 >= ${threshold}::int
            THEN now() + make_interval(secs => greatest(${baseCooldown}::int, coalesce(${retryAfter}::float8, 0)))
            WHEN ${retryAfter}::float8 IS NOT NULL THEN now() + make_interval(secs => ${retryAfter}::float8)
            END,
          probe_until = NULL,
          version = b.version + 1,
          updated_at = now()
        WHERE b.deployment = ${deployment}
        RETURNING ${columns}`

    /** The row a failure updates: created by a deployment's first failure ever. */
    const ensureRow = (deployment: string) =>
      sql`INSERT INTO deployment_breakers (deployment, state) VALUES (${deployment}, 'closed') ON CONFLICT DO NOTHING`

    const recordFailure = (deployment: string, retryAfter: number | null) =>
      Effect.flatMap(failed(deployment, retryAfter), (rows) =>
        rows.length > 0 ? Effect.succeed(rows) : Effect.zipRight(ensureRow(deployment), failed(deployment, retryAfter)))

    /**
     * A success closes the breaker when there is something to close: failures counted while closed,
     * or a cooldown that has ended. Answers the row as it is either way, to correct a stale memory.
     */
    const succeeded = (deployment: string) =>
      sql<BreakerColumns>`
        WITH closed AS (
          UPDATE deployment_breakers SET
            consecutive_failures = 0, state = 'closed', retry_at = NULL, cooldown_seconds = 0, probe_until = NULL,
            version = version + 1, updated_at = now()
          WHERE deployment = ${deployment}
            AND (state = 'closed' AND consecutive_failures > 0 OR state <> 'closed' AND retry_at <= now())
          RETURNING ${columns}
        )
        SELECT * FROM closed
        UNION ALL
        SELECT ${columns} FROM deployment_breakers
        WHERE deployment = ${deployment} AND NOT EXISTS (SELECT 1 FROM closed)`

    /**
     * Takes the half-open probe if nobody holds it: one UPDATE, so of any number of callers in any
     * number of processes exactly one gets the row back as claimed.
     */
    const claimProbe = (deployment: string) =>
      sql<BreakerColumns & { readonly claimed: boolean }>`
        WITH claimed AS (
          UPDATE deployment_breakers SET
            state = 'half_open', probe_until = now() + make_interval(secs => ${PROBE_LEASE_SECONDS}::int),
            version = version + 1, updated_at = now()
          WHERE deployment = ${deployment} AND state <> 'closed' AND retry_at <= now()
            AND (probe_until IS NULL OR probe_until <= now())
          RETURNING ${columns}
        )
        SELECT *, true AS claimed FROM claimed
        UNION ALL
        SELECT ${columns}, false AS claimed FROM deployment_breakers
        WHERE deployment = ${deployment} AND NOT EXISTS (SELECT 1 FROM claimed)`.pipe(
        Effect.map((rows) => {
          learn(rows)
          return rows[0]?.claimed === true
        }),
        Effect.catchAllCause((cause) =>
          Effect.as(warnUnlessOutage("deployment health: probe claim failed")(cause), false)
        )
      )

    const sync = Effect.gen(function*() {
      const sent = yield* Clock.currentTimeMillis
      const read = yield* readBreakers(sql)
      // The database read its clock about halfway through the round trip.
      const received = yield* Clock.currentTimeMillis
      clockOffset = read.now - (sent + received) / 2
      for (const row of read.rows) {
        if (newer(breakers.get(row.deployment), row)) breakers.set(row.deployment, row)
      }
    }).pipe(Effect.catchAllCause(warnUnlessOutage("deployment health: breaker sync failed")))

    /** Writes every bucket with new outcomes, whole; drops buckets older than the retention on the way. */
    const flush = Effect.suspend(() => {
      const snapshots = buckets.unwritten()
      if (snapshots.length === 0) return Effect.void
      const input = snapshots.map(({ deployment, start, totals }) => ({
        deployment,
        bucket_ms: start,
        requests: totals.requests,
        failures: totals.failures,
        fallbacks: totals.fallbacks,
        latency: toJson(totals.latency),
        ttft: toJson(totals.ttft),
        output_tokens: totals.outputTokens,
        generation_ms: Math.round(totals.generationMs)
      }))
      return sql`
        WITH input AS (
          SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS x(
            deployment text, bucket_ms float8, requests int, failures int, fallbacks int, latency jsonb, ttft jsonb,
            output_tokens bigint, generation_ms bigint)
        ), expired AS (
          DELETE FROM deployment_stats WHERE bucket < now() - make_interval(mins => ${STATS_KEEP_MINUTES}::int)
        )
        INSERT INTO deployment_stats (
          instance, deployment, bucket, requests, failures, fallbacks, latency_histogram, ttft_histogram,
          output_tokens, generation_ms)
        SELECT ${instance}, deployment, to_timestamp(bucket_ms / 1000), requests, failures, fallbacks, latency, ttft,
               output_tokens, generation_ms
        FROM input
        ON CONFLICT (instance, deployment, bucket) DO UPDATE SET
          requests = excluded.requests, failures = excluded.failures, fallbacks = excluded.fallbacks,
          latency_histogram = excluded.latency_histogram, ttft_histogram = excluded.ttft_histogram,
          output_tokens = excluded.output_tokens, generation_ms = excluded.generation_ms, updated_at = now()`.pipe(
        Effect.tap(() => Effect.sync(() => buckets.written(snapshots, now()))),
        Effect.asVoid,
        Effect.catchAllCause(warnUnlessOutage("deployment health: stats flush failed"))
      )
    })

    // Start knowing what the other processes know; then keep up, and share our numbers.
    yield* sync
    yield* Effect.forkScoped(Effect.repeat(sync, Schedule.spaced(`${settings.syncMillis} millis`)))
    yield* Effect.forkScoped(Effect.repeat(flush, Schedule.spaced(`${settings.statsFlushMillis} millis`)))
    // What this process measured since the last flush is not lost when it stops.
    yield* Effect.addFinalizer(() => flush)

    const windowOf = (deployment: string) => {
      let window = windows.get(deployment)
      if (window === undefined) windows.set(deployment, window = makeWindow())
      return window
    }

    return {
      // Counted when called (services/atOnce.ts): a call's work after its answer, with no step of its own.
      record: (outcome) => {
        const at = now()
        windowOf(outcome.deployment).add(outcome, at)
        buckets.add(outcome, at)
        if (Option.isSome(metrics)) metrics.value.upstreamAttempt(outcome.deployment, outcome.ok ? "ok" : outcome.failure ?? "error")
        if (!outcome.ok) return write(recordFailure(outcome.deployment, outcome.retryAfterSeconds ?? null))
        const row = breakers.get(outcome.deployment)
        // The hot path: a healthy deployment's success has no news for anyone.
        if (row === undefined || (row.stored === "closed" && row.consecutiveFailures === 0)) return Effect.void
        // An answer to a call sent before the breaker opened does not cut its cooldown short.
        if (stateAt(row, at) === "open") return Effect.void
        return write(succeeded(outcome.deployment))
      },

      view: (deployment): DeploymentHealth => {
        const at = now()
        return viewOf(deployment, breakers.get(deployment), windows.get(deployment)?.stats(at) ?? NOTHING_MEASURED, at)
      },

      // Asked when called (services/atOnce.ts): every call's first try asks, with no step of its own.
      admits: (deployment) => {
        const at = now()
        const row = breakers.get(deployment)
        const state = stateAt(row, at)
        if (state !== "half_open") return Effect.succeed(state === "closed")
        // Someone (maybe a caller of this process) holds the probe, or this process is asking already.
        if (row!.probeUntil !== null && row!.probeUntil > at) return Effect.succeed(false)
        if (claiming.has(deployment)) return Effect.succeed(false)
        return Effect.acquireUseRelease(
          Effect.sync(() => claiming.add(deployment)),
          () => claimProbe(deployment),
          () => Effect.sync(() => claiming.delete(deployment))
        )
      }
    }
  })
)
