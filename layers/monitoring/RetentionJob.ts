/**
 * The retention job: every `monitoring.retentionIntervalSeconds` each process
 * deletes events, per-call records and buckets past their retention, at most
 * `retentionBatch` rows a statement (found by time through block-range
 * indexes), so no statement holds locks long or bloats a transaction. Minute
 * buckets serve windows up to 6 hours and go after 2 days; hour buckets stay
 * at least 31 days (the 30-day window). Receipts are never deleted.
 * Processes running it at once only share the work.
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../../services/Config.ts"
import { warnUnlessOutage } from "../../services/DatabaseStatus.ts"

const MINUTE_BUCKET_DAYS = 2
const LONGEST_WINDOW_DAYS = 31

export interface Swept {
  readonly events: number
  readonly callRecords: number
  readonly buckets: number
}

/** One run of the job, for tests and operators; the layer also runs it on its schedule. */
export class Retention extends Context.Tag("svc/Retention")<Retention, {
  readonly sweep: Effect.Effect<Swept>
}>() {}

export const RetentionJob = Layer.scoped(
  Retention,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const settings = (yield* AppConfig).file.monitoring
    const batch = settings.retentionBatch

    /** Deletes in batches until a batch comes back short; how many rows went. */
    const inBatches = (statement: Effect.Effect<ReadonlyArray<{ deleted: number }>, unknown>) => {
      const loop = (total: number): Effect.Effect<number, unknown> =>
        Effect.flatMap(statement, ([row]) => {
          const deleted = row?.deleted ?? 0
          return deleted < batch ? Effect.succeed(total + deleted) : Effect.zipRight(Effect.yieldNow(), loop(total + deleted))
        })
      return loop(0)
    }

    /** Deletes the rows of `table` that `old` picks, `batch` at a time. */
    const deleteOld = (table: "events" | "call_records" | "call_stats", old: Statement.Fragment) =>
      inBatches(sql<{ deleted: number }>`
        WITH gone AS (
          DELETE FROM ${sql(table)} WHERE ctid IN (SELECT ctid FROM ${sql(table)} WHERE ${old} LIMIT ${batch})
          RETURNING 1
        ) SELECT count(*)::int AS deleted FROM gone`)

    const events = deleteOld("events", sql`created_at < now() - make_interval(days => ${settings.eventRetentionDays})`)
    const callRecords = deleteOld("call_records", sql`ended_at < now() - make_interval(days => ${settings.callRetentionDays})`)
    const hourDays = Math.max(settings.callRetentionDays, LONGEST_WINDOW_DAYS)
    const buckets = deleteOld(
      "call_stats",
      sql`(granularity = 'minute' AND bucket < now() - make_interval(days => ${MINUTE_BUCKET_DAYS}))
        OR (granularity = 'hour' AND bucket < now() - make_interval(days => ${hourDays}))`
    )

    const sweep = Effect.all({ events, callRecords, buckets }).pipe(Effect.orDie)

    // First after one interval: a start has enough to do.
    yield* Effect.forkScoped(
      Effect.sleep(`${settings.retentionIntervalSeconds} seconds`).pipe(
        Effect.zipRight(Effect.catchAllCause(sweep, warnUnlessOutage("monitoring: retention job failed"))),
        Effect.forever
      )
    )
    return Retention.of({ sweep })
  })
)
