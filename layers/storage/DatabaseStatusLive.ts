/**
 * `DatabaseStatus` kept in this process: the first outage seen logs
 * "database unreachable: <reason>" and starts a probe (`SELECT 1` every
 * `database.probeIntervalMs`); the probe's first answer logs "database back".
 * Nothing else is logged while the database is down, however many requests
 * meet the outage.
 */
import { SqlClient } from "@effect/sql"
import { type Cause, Effect, Layer, Schedule } from "effect"
import { ServiceUnavailable } from "../../services/ApiError.ts"
import { AppConfig } from "../../services/Config.ts"
import { DatabaseStatus, isDatabaseOutage, outageReason } from "../../services/DatabaseStatus.ts"

/** The status over a given probe (a query on the real database; a switch in tests). */
export const makeDatabaseStatus = (probe: Effect.Effect<unknown, unknown>, settings: {
  readonly probeIntervalMs: number
  readonly retryAfterSeconds: number
}) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    let up = true
    const recovered = Effect.zipRight(
      Effect.sync(() => {
        up = true
      }),
      Effect.logInfo("database back")
    )
    // Until the probe answers; the layer's scope ends it if the app stops first.
    const probing = probe.pipe(
      Effect.retry(Schedule.spaced(`${settings.probeIntervalMs} millis`)),
      Effect.delay(`${settings.probeIntervalMs} millis`),
      Effect.zipRight(recovered)
    )
    const wentDown = (cause: Cause.Cause<unknown>) =>
      Effect.suspend(() => {
        if (!up) return Effect.void
        up = false
        return Effect.zipRight(
          Effect.logWarning(`database unreachable: ${outageReason(cause)}`),
          // Interruptible whatever region met the outage (a settlement is uninterruptible), so the app can stop.
          Effect.forkIn(Effect.interruptible(probing), scope)
        )
      })
    return DatabaseStatus.of({
      isUp: () => up,
      observe: (cause) =>
        isDatabaseOutage(cause) ? Effect.as(wentDown(cause), true) : Effect.succeed(false),
      unavailable: () =>
        new ServiceUnavailable({
          message: "The gateway cannot reach its database right now; nothing was charged. Retry later.",
          retryAfterSeconds: settings.retryAfterSeconds
        })
    })
  })

export const DatabaseStatusLive = Layer.scoped(
  DatabaseStatus,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { file } = yield* AppConfig
    return yield* makeDatabaseStatus(sql`SELECT 1`, file.database)
  })
)
