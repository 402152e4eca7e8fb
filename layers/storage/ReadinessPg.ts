/**
 * Readiness from the database itself: one indexed read of the migrations
 * table, bounded in time so a frozen database makes the probe fail rather
 * than hang (a load balancer's probe has its own short timeout). The probe
 * needs no key, so its answer is kept for a second: a flood of probes costs
 * the database one read per second, not one per request.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { ServiceUnavailable } from "../../services/ApiError.ts"
import { Readiness } from "../../services/Readiness.ts"
import { LATEST_MIGRATION } from "./Migrations.ts"

const PROBE_TIMEOUT = "2 seconds"
const ANSWER_KEPT = "1 second"

const notReady = (why: string) => new ServiceUnavailable({ message: `Not ready: ${why}.`, retryAfterSeconds: 5 })

export const ReadinessPg = Layer.effect(
  Readiness,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const latest = sql<{ latest: number | null }>`SELECT max(migration_id) AS latest FROM svc_migrations`.pipe(
      Effect.timeoutFail({ duration: PROBE_TIMEOUT, onTimeout: () => notReady("the database did not answer in time") }),
      Effect.catchTag("SqlError", () => Effect.fail(notReady("the database cannot be reached")))
    )
    const check = Effect.flatMap(latest, ([row]) => {
      const migration = Number(row?.latest ?? 0)
      return migration >= LATEST_MIGRATION
        ? Effect.succeed({ migration })
        : Effect.fail(notReady(`the database schema is at migration ${migration} of ${LATEST_MIGRATION}`))
    })
    return { check: yield* Effect.cachedWithTTL(check, ANSWER_KEPT) }
  })
)
