/**
 * Whether the gateway can reach its database, as requests and background work
 * find it. A failure that means "the database is not there" (connection
 * refused or lost, a connect or statement timeout, a server shutting down,
 * read-only or out of connections) turns the state down; a probe turns it up
 * again. Each change is logged once ("database unreachable" / "database
 * back"), never once per request, and a request that met an outage before its
 * upstream call is answered 503 `service_unavailable` with `Retry-After`.
 */
import { Cause, Context, Effect } from "effect"
import type { ServiceUnavailable } from "./ApiError.ts"

export class DatabaseStatus extends Context.Tag("svc/DatabaseStatus")<DatabaseStatus, {
  /** Whether the last word on the database was that it answers (read when called: a call's settlement asks it on every call). */
  readonly isUp: () => boolean
  /** Looks at a failure: true when it is an outage (the state goes down, logged once on the change). */
  readonly observe: (cause: Cause.Cause<unknown>) => Effect.Effect<boolean>
  /** The caller's answer while the database cannot be reached. */
  readonly unavailable: () => ServiceUnavailable
}>() {}

/** SQLSTATEs that say the server cannot serve now, not that the statement is wrong. */
const OUTAGE_STATES = new Set([
  "25006", // read_only_sql_transaction: a standby or a server made read-only
  "53000", // insufficient_resources
  "53100", // disk_full
  "53200", // out_of_memory
  "53300", // too_many_connections
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, shutting down)
  "57P05" // idle_session_timeout
])

/** Socket-level failures of the driver. */
const OUTAGE_ERRNOS = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ECONNABORTED"])

/** Messages of the `pg` driver and pool for a lost, refused or timed-out connection. */
const OUTAGE_MESSAGE =
  /Connection terminated|connection error|timeout exceeded when trying to connect|Query read timeout|Connection timed out|not queryable/i

const isOutageError = (error: unknown, depth = 0): boolean => {
  if (error === null || typeof error !== "object" || depth > 6) return false
  const { code, message, cause } = error as { code?: unknown; message?: unknown; cause?: unknown }
  if (typeof code === "string" && (code.startsWith("08") && code.length === 5 || OUTAGE_STATES.has(code))) return true
  if (typeof code === "string" && OUTAGE_ERRNOS.has(code)) return true
  // query_canceled is an outage only when our statement_timeout ran out (a frozen server); a
  // statement cancelled because its request went away ("due to user request") is not.
  if (code === "57014") return typeof message === "string" && /statement timeout/i.test(message)
  if (typeof message === "string" && OUTAGE_MESSAGE.test(message)) return true
  if (error instanceof AggregateError && error.errors.some((inner) => isOutageError(inner, depth + 1))) return true
  return isOutageError(cause, depth + 1)
}

/** Whether a failure (typed or a defect) is the database being unreachable rather than a fault of ours. */
export const isDatabaseOutage = (cause: Cause.Cause<unknown>): boolean =>
  [...Cause.failures(cause), ...Cause.defects(cause)].some((error) => isOutageError(error))

/** A one-line description of an outage for the log: the driver's message, without a stack. */
export const outageReason = (cause: Cause.Cause<unknown>): string => {
  const first = [...Cause.failures(cause), ...Cause.defects(cause)].find((error) => isOutageError(error))
  let error: unknown = first
  // The innermost message names the fault (ECONNREFUSED, "Connection terminated", …).
  for (let depth = 0; depth < 6; depth++) {
    const inner = (error as { cause?: unknown } | undefined)?.cause
    if (inner === undefined || inner === null || typeof inner !== "object") break
    error = inner
  }
  const text = error instanceof AggregateError && error.errors[0] instanceof Error
    ? error.errors[0].message
    : error instanceof Error ? error.message : String(error)
  return text.split("\n")[0]!.slice(0, 200)
}

/**
 * A handler for background work that may fail: an outage says nothing (the status logs it once),
 * anything else is a warning with its cause.
 */
export const warnUnlessOutage = (message: string) => (cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  isDatabaseOutage(cause) ? Effect.void : Effect.logWarning(message, cause)
