/**
 * Deployment health shared by the gateway processes on one database: the
 * circuit breaker of each deployment (written only when its state changes),
 * and each process's windowed outcome numbers in 10-second buckets, which
 * `GET /v1/providers/health` merges.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // `state` is what was last written; an 'open' row whose retry_at has passed reads as half-open.
  // `version` orders the writes of one row, so a process never replaces what it knows with older news.
  yield* sql`
    CREATE TABLE deployment_breakers (
      deployment text PRIMARY KEY,
      consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
      state text NOT NULL CHECK (state IN ('closed', 'open', 'half_open')),
      retry_at timestamptz,
      cooldown_seconds integer NOT NULL DEFAULT 0,
      probe_until timestamptz,
      version bigint NOT NULL DEFAULT 1,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  // Histograms are sparse JSON objects {bucket index: count} over fixed log-scale bounds (layers/health/latencyHistogram.ts).
  yield* sql`
    CREATE TABLE deployment_stats (
      instance text NOT NULL,
      deployment text NOT NULL,
      bucket timestamptz NOT NULL,
      requests integer NOT NULL,
      failures integer NOT NULL,
      fallbacks integer NOT NULL,
      latency_histogram jsonb NOT NULL,
      ttft_histogram jsonb NOT NULL,
      output_tokens bigint NOT NULL,
      generation_ms bigint NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (instance, deployment, bucket)
    )`
  yield* sql`CREATE INDEX deployment_stats_bucket ON deployment_stats (bucket)`
})
