/**
 * The retention job on a real database: events, per-call records and
 * buckets past their retention go, in batches (more rows than one batch
 * holds), and nothing younger does; receipts are not touched.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Retention, RetentionJob } from "../layers/monitoring/RetentionJob.ts"
import { freshStorage } from "./support/moneyLayers.ts"
import { layer } from "./support/layer.ts"

const settings = { monitoring: { eventRetentionDays: 10, callRetentionDays: 40, retentionBatch: 100 } }

layer(RetentionJob.pipe(Layer.provideMerge(freshStorage(settings))), { timeout: "60 seconds" })("retention job", (it) => {
  it.effect("deletes what is past its retention in batches and keeps the rest", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const retention = yield* Retention
      yield* sql`
        INSERT INTO events (id, type, account_id, data, created_at)
        SELECT 'evt_old' || i, 'key.created', 'acct_r', '{}'::jsonb, now() - interval '11 days'
        FROM generate_series(1, 250) AS i`
      yield* sql`
        INSERT INTO events (id, type, account_id, data, created_at)
        SELECT 'evt_new' || i, 'key.created', 'acct_r', '{}'::jsonb, now() - interval '9 days' FROM generate_series(1, 5) AS i`
      yield* sql`
        INSERT INTO call_records (request_id, account_id, endpoint, status, latency_ms, input_tokens, output_tokens, spend_usd, ended_at)
        SELECT 'req_' || i, 'acct_r', '/v1/chat/completions', 200, 1, 1, 1, 0, now() - make_interval(days => CASE WHEN i <= 120 THEN 41 ELSE 39 END)
        FROM generate_series(1, 130) AS i`
      yield* sql`
        INSERT INTO call_stats (account_id, granularity, bucket, instance, requests, server_errors, errors, latency, ttft,
                                input_tokens, output_tokens, spend_usd)
        SELECT 'acct_r', g, now() - make_interval(days => d), 'i', 1, 0, '{}', '{}', '{}', 0, 0, 0
        FROM (VALUES ('minute', 3), ('minute', 1), ('hour', 41), ('hour', 39)) AS t(g, d)`
      const swept = yield* retention.sweep
      expect(swept).toEqual({ events: 250, callRecords: 120, buckets: 2 })
      const left = yield* sql<{ events: number; records: number; buckets: string }>`
        SELECT (SELECT count(*)::int FROM events WHERE account_id = 'acct_r') AS events,
               (SELECT count(*)::int FROM call_records) AS records,
               (SELECT string_agg(granularity, ',' ORDER BY granularity) FROM call_stats) AS buckets`
      expect(left).toEqual([{ events: 5, records: 10, buckets: "hour,minute" }])
      expect(yield* retention.sweep).toEqual({ events: 0, callRecords: 0, buckets: 0 })
    }))
})
