/**
 * `CallStats` on the database: calls are counted in memory (callBuckets.ts)
 * and written every `monitoring.flushMillis` — the new per-call records in one
 * statement, the changed buckets whole, keyed by this process — and at stop.
 * A window of up to 6 hours reads minute buckets, a longer one hour buckets,
 * each process's rows added up (callWindow.ts): its oldest bucket is counted
 * whole, so a window reaches back at most one bucket further than asked.
 * A flush that fails keeps everything for the next; records beyond 10,000
 * waiting are dropped (logged) rather than held without bound.
 */
import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Schedule } from "effect"
import { CallStats, type FinishedCall } from "../../services/CallStats.ts"
import { AppConfig } from "../../services/Config.ts"
import { warnUnlessOutage } from "../../services/DatabaseStatus.ts"
import { formatUsd } from "../../services/Money.ts"
import { type JsonField, jsonRows } from "../storage/jsonRows.ts"
import { HOUR_MS, makeCallBuckets, MINUTE_MS } from "./callBuckets.ts"
import { callWindow, type StatsRow } from "./callWindow.ts"

const MAX_WAITING_RECORDS = 10_000
/** Windows up to this long read minute buckets. */
const MINUTE_WINDOWS_UP_TO = 6 * HOUR_MS

/** A call record's fields, in the order of its JSON array (`recordRow`; layers/storage/jsonRows.ts). */
const RECORD_FIELDS: ReadonlyArray<JsonField> = [
  ["request_id", "text"], ["account_id", "text"], ["key_id", "text"], ["endpoint", "text"], ["status", "int"],
  ["code", "text"], ["latency_ms", "float8"], ["ttft_ms", "float8"], ["input_tokens", "int"],
  ["output_tokens", "int"], ["spend", "numeric"], ["ended_ms", "float8"]
]

const recordRow = (call: FinishedCall) => [
  call.requestId,
  call.accountId,
  call.keyId ?? null,
  call.endpoint,
  call.status,
  call.code ?? null,
  call.latencyMs,
  call.ttftMs ?? null,
  call.inputTokens,
  call.outputTokens,
  formatUsd(call.spend),
  call.endedAt
]

/** The new records in one statement: $1 their rows (`recordRow`); one already written is skipped. */
const WRITE_RECORDS = `
  INSERT INTO call_records (
    request_id, account_id, key_id, endpoint, status, code, latency_ms, ttft_ms, input_tokens, output_tokens,
    spend_usd, ended_at)
  SELECT request_id, account_id, key_id, endpoint, status, code, latency_ms, ttft_ms, input_tokens, output_tokens,
         spend, to_timestamp(ended_ms / 1000)
  FROM (${jsonRows("$1", RECORD_FIELDS)}) input
  ON CONFLICT (request_id) DO NOTHING`

export const CallStatsPg = Layer.scoped(
  CallStats,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { file } = yield* AppConfig
    const instance = `${hostname()}/${process.pid}/${randomBytes(6).toString("hex")}`
    const buckets = makeCallBuckets()
    let waiting: Array<FinishedCall> = []

    const writeRecords = (records: ReadonlyArray<FinishedCall>) =>
      records.length === 0
        ? Effect.void
        : Effect.asVoid(sql.unsafe(WRITE_RECORDS, [JSON.stringify(records.map(recordRow))]))

    const writeBuckets = (rows: ReturnType<ReturnType<typeof makeCallBuckets>["changed"]>["rows"]) =>
      rows.length === 0 ? Effect.void : sql`
        INSERT INTO call_stats (
          account_id, granularity, bucket, instance, requests, server_errors, errors, latency, ttft,
          input_tokens, output_tokens, spend_usd)
        SELECT account_id, granularity, to_timestamp(bucket_ms / 1000), ${instance}, requests, server_errors, errors,
               latency, ttft, input_tokens, output_tokens, spend
        FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(
          account_id text, granularity text, bucket_ms float8, requests int, server_errors int, errors jsonb,
          latency jsonb, ttft jsonb, input_tokens bigint, output_tokens bigint, spend numeric)
        ON CONFLICT (account_id, granularity, bucket, instance) DO UPDATE SET
          requests = excluded.requests, server_errors = excluded.server_errors, errors = excluded.errors,
          latency = excluded.latency, ttft = excluded.ttft, input_tokens = excluded.input_tokens,
          output_tokens = excluded.output_tokens, spend_usd = excluded.spend_usd`.pipe(Effect.asVoid)

    const flush = Effect.suspend(() => {
      const records = waiting
      const changed = buckets.changed()
      if (records.length === 0 && changed.rows.length === 0) return Effect.void
      waiting = []
      return Effect.all([writeRecords(records), writeBuckets(changed.rows)]).pipe(
        sql.withTransaction,
        Effect.zipRight(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => changed.written(now)))),
        Effect.tapErrorCause(() =>
          Effect.sync(() => {
            waiting = [...records, ...waiting]
          })
        ),
        Effect.catchAllCause(warnUnlessOutage("monitoring: call records flush failed"))
      )
    })

    yield* Effect.forkScoped(Effect.repeat(flush, Schedule.spaced(`${file.monitoring.flushMillis} millis`)))
    yield* Effect.addFinalizer(() => flush)

    return CallStats.of({
      // Counted when called (services/atOnce.ts): every call's record, with no step of its own.
      record: (call) => {
        buckets.add(call)
        if (waiting.length < MAX_WAITING_RECORDS) {
          waiting.push(call)
          return Effect.void
        }
        return Effect.logWarning("monitoring: too many call records waiting for the database; this one is dropped")
      },
      flush,
      window: (accountId, windowMs) =>
        Effect.gen(function*() {
          // This process's own numbers are current; another's are at most a flush interval behind.
          yield* flush
          const now = yield* Clock.currentTimeMillis
          const granularity = windowMs <= MINUTE_WINDOWS_UP_TO ? "minute" : "hour"
          const span = granularity === "minute" ? MINUTE_MS : HOUR_MS
          const start = now - windowMs
          const from = start - (start % span)
          const rows = yield* sql<StatsRow>`
            SELECT (extract(epoch FROM bucket) * 1000)::float8 AS bucket_ms, requests, server_errors, errors, latency, ttft,
                   input_tokens::text, output_tokens::text, spend_usd::text AS spend
            FROM call_stats
            WHERE account_id = ${accountId} AND granularity = ${granularity}
              AND bucket >= to_timestamp(${from / 1000}) AND bucket <= to_timestamp(${now / 1000})`.pipe(Effect.orDie)
          return callWindow(rows, from, now - (now % span), span)
        })
    })
  })
)
