/**
 * Rows of the shared `deployment_breakers` table as the processes hold them
 * in memory, and how a row reads at a given moment. A deployment without a
 * row has never failed: it is closed.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { BreakerState, DeploymentHealth } from "../../services/Health.ts"
import type { WindowStats } from "./healthWindow.ts"

export interface BreakerRow {
  readonly deployment: string
  readonly consecutiveFailures: number
  /** As written: an 'open' or 'half_open' row whose `retryAt` has passed reads as half-open. */
  readonly stored: BreakerState
  /** Epoch milliseconds (database clock). */
  readonly retryAt: number | null
  /** Until when one caller holds the half-open probe (epoch ms, database clock). */
  readonly probeUntil: number | null
  /** Increases with every write of the row: the higher one is the newer news. */
  readonly version: number
}

/** The columns every statement about breakers returns. */
export const BREAKER_COLUMNS = "deployment, consecutive_failures, state, retry_at, probe_until, version"

export interface BreakerColumns {
  readonly deployment: string
  readonly consecutive_failures: number
  readonly state: BreakerState
  readonly retry_at: Date | null
  readonly probe_until: Date | null
  readonly version: string | number
}

export const fromColumns = (row: BreakerColumns): BreakerRow => ({
  deployment: row.deployment,
  consecutiveFailures: row.consecutive_failures,
  stored: row.state,
  retryAt: row.retry_at === null ? null : row.retry_at.getTime(),
  probeUntil: row.probe_until === null ? null : row.probe_until.getTime(),
  version: Number(row.version)
})

export const stateAt = (row: BreakerRow | undefined, now: number): BreakerState => {
  if (row === undefined || row.stored === "closed") return "closed"
  return row.retryAt !== null && row.retryAt > now ? "open" : "half_open"
}

/** Keeps `known` unless `news` is at least as recent. */
export const newer = (known: BreakerRow | undefined, news: BreakerRow): boolean =>
  known === undefined || news.version >= known.version

/** Reads the whole table with the database's clock (the row-less case still answers the clock). */
export const readBreakers = (sql: SqlClient.SqlClient) =>
  sql<{ readonly db_now: Date } & ({ readonly deployment: null } | BreakerColumns)>`
    SELECT now() AS db_now, b.deployment, b.consecutive_failures, b.state, b.retry_at, b.probe_until, b.version
    FROM (SELECT 1) AS one LEFT JOIN deployment_breakers AS b ON true`.pipe(
    Effect.map((rows) => ({
      now: rows[0]!.db_now.getTime(),
      rows: rows.flatMap((row) => row.deployment === null ? [] : [fromColumns(row as BreakerColumns)])
    }))
  )

/** A deployment's view at `at`: its breaker (none yet reads as closed) and its window's numbers. */
export const viewOf = (deployment: string, row: BreakerRow | undefined, stats: WindowStats, at: number): DeploymentHealth => {
  const state = stateAt(row, at)
  return {
    deployment,
    state,
    consecutiveFailures: row?.consecutiveFailures ?? 0,
    ...stats,
    retryAt: state === "open" && row?.retryAt != null ? new Date(row.retryAt) : undefined
  }
}
