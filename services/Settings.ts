/**
 * The operational sections of the config file (services/Config.ts): deployment
 * health, retries, deadlines, the database connection, and the limits on what
 * a request may be and how often a key may call. Each field has its default in
 * its schema; a section's defaults (used when the section is omitted) are its
 * schema decoded from `{}`, so they are written once.
 */
import { Schema } from "effect"

export const PositiveInt = Schema.Int.pipe(Schema.positive())

/** Deployment health and its circuit breaker (layers/health/HealthPg.ts). */
export const HealthSettings = Schema.Struct({
  /** Consecutive failures of a deployment that open its breaker. */
  failureThreshold: Schema.optionalWith(PositiveInt, { default: () => 3 }),
  /** How long an opened breaker keeps the deployment out before one probe call may try it. */
  cooldownSeconds: Schema.optionalWith(PositiveInt, { default: () => 30 }),
  /** The cooldown doubles with every failed probe, up to this. */
  maxCooldownSeconds: Schema.optionalWith(PositiveInt, { default: () => 300 }),
  /** How often each process re-reads the shared breaker table (what other processes learned). */
  syncMillis: Schema.optionalWith(PositiveInt, { default: () => 1000 }),
  /** How often each process writes its windowed numbers to the shared stats table. */
  statsFlushMillis: Schema.optionalWith(PositiveInt, { default: () => 5000 })
})
export type HealthSettings = typeof HealthSettings.Type

export const healthDefaults = Schema.decodeSync(HealthSettings)({})

/** Retries of a call across its routes (layers/routing/failover.ts). */
export const RetrySettings = Schema.Struct({
  /** Attempts per call, over all its routes. */
  maxAttempts: Schema.optionalWith(PositiveInt, { default: () => 4 }),
  /** Backoff before a route is tried again: this, doubling per round, jittered. */
  backoffBaseMs: Schema.optionalWith(PositiveInt, { default: () => 100 }),
  backoffCapMs: Schema.optionalWith(PositiveInt, { default: () => 2000 }),
  /** A `Retry-After` up to this long is waited for; a longer one leaves the route out of the call. */
  maxRetryWaitMs: Schema.optionalWith(PositiveInt, { default: () => 2000 })
})
export type RetrySettings = typeof RetrySettings.Type

export const retryDefaults = Schema.decodeSync(RetrySettings)({})

/** The connection to PostgreSQL and what an outage costs (layers/storage/Database.ts, DatabaseStatusLive.ts). */
export const DatabaseSettings = Schema.Struct({
  /** Longest wait for a new connection; then the request is answered 503. */
  connectTimeoutMs: Schema.optionalWith(PositiveInt, { default: () => 5000 }),
  /** Longest a statement may run (the server's `statement_timeout`; the driver gives up 1 s later). */
  statementTimeoutMs: Schema.optionalWith(PositiveInt, { default: () => 15_000 }),
  /** An idle pooled connection is closed after this. */
  idleTimeoutMs: Schema.optionalWith(PositiveInt, { default: () => 30_000 }),
  /** Connections per gateway process. */
  poolSize: Schema.optionalWith(PositiveInt, { default: () => 10 }),
  /** How long a start waits for an unreachable database before giving up; 0 waits forever. */
  startupWaitSeconds: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 300 }),
  /** `Retry-After` of the 503 answered while the database cannot be reached. */
  retryAfterSeconds: Schema.optionalWith(PositiveInt, { default: () => 5 }),
  /** How often an unreachable database is asked again (and kept settlements retried). */
  probeIntervalMs: Schema.optionalWith(PositiveInt, { default: () => 1000 })
})
export type DatabaseSettings = typeof DatabaseSettings.Type

export const databaseDefaults = Schema.decodeSync(DatabaseSettings)({})
/**
 * How long a call may take (layers/upstream/deadline.ts). Each attempt is also bounded, from
 * connecting to its last byte, by its provider's `timeoutMs`.
 */
export const DeadlineSettings = Schema.Struct({
  /** The whole call, over all its attempts and backoffs, streaming included. */
  callMs: Schema.optionalWith(PositiveInt, { default: () => 300_000 }),
  /** A stream that delivers nothing for this long after its first chunk is cut off. */
  streamIdleMs: Schema.optionalWith(PositiveInt, { default: () => 30_000 })
})
export type DeadlineSettings = typeof DeadlineSettings.Type

export const deadlineDefaults = Schema.decodeSync(DeadlineSettings)({})

/** A limit: a whole number from 1 to 2³¹−1. */
const LimitValue = PositiveInt.pipe(Schema.lessThanOrEqualTo(2_147_483_647))

/** Limits that apply where a key (rpm, tpm) or account (concurrency) sets none; absent = unlimited. */
const RateLimitDefaults = Schema.Struct({
  rpm: Schema.optional(LimitValue),
  tpm: Schema.optional(LimitValue),
  concurrency: Schema.optional(LimitValue)
})

/** What a request body may be, checked before anything else reads it (README "Input limits"). */
export const LimitsConfig = Schema.Struct({
  /** Largest accepted request body. */
  maxBodyBytes: Schema.optionalWith(PositiveInt, { default: () => 20 * 1024 * 1024 }),
  /** Deepest nesting of arrays and objects in a JSON body (at most 1000: deeper values overflow the stack elsewhere). */
  maxJsonDepth: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1000)), { default: () => 64 }),
  /** Most items in any one array of a JSON body. */
  maxArrayItems: Schema.optionalWith(PositiveInt, { default: () => 10_000 }),
  /** Longest a client may take to send a request's headers and body (a slow or unfinished upload is cut: 408). */
  requestTimeoutMs: Schema.optionalWith(PositiveInt, { default: () => 60_000 }),
  /** Rate limits of keys that set none (`rpm`, `tpm`), and every account's cap on concurrent calls. */
  defaults: Schema.optionalWith(RateLimitDefaults, { default: () => ({}) }),
  /** How long a concurrency permit outlives a process that died holding it (renewed while its call runs). */
  permitLeaseSeconds: Schema.optionalWith(PositiveInt, { default: () => 30 }),
  /** Where the counts live in Redis (`REDIS_URL`): every key starts with this, so installs can share a server. */
  redisKeyPrefix: Schema.optionalWith(Schema.String, { default: () => "svc:rl:" })
})
export const limitsDefaults = Schema.decodeSync(LimitsConfig)({})

/** An origin a browser app calls from (`https://app.example.com`, `http://localhost:5173`), or `*` for any. */
const Origin = Schema.Union(
  Schema.Literal("*"),
  Schema.String.pipe(Schema.pattern(/^https?:\/\/[^/\s?#]+$/, { message: () => "an origin is scheme://host[:port], without a path" }))
)

/** Cross-origin access for browser apps: off (no CORS headers, so browsers refuse) until origins are listed. */
export const CorsSettings = Schema.Struct({
  origins: Schema.optionalWith(Schema.Array(Origin), { default: () => [] })
})

/** What a SIGTERM or SIGINT does: stop accepting, let calls in flight finish this long, then cut what is left. */
export const ShutdownSettings = Schema.Struct({
  drainSeconds: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 3600)), { default: () => 25 })
})

/** The date the deprecated `POST /v1/agents/{agentId}/chat` stops working, unless the config says otherwise. */
export const LEGACY_AGENT_CHAT_SUNSET = "Wed, 30 Jun 2027 00:00:00 GMT"

/** An IMF-fixdate (RFC 9110), as the `Sunset` header carries it. */
const HttpDate = Schema.String.pipe(
  Schema.filter((text) => !Number.isNaN(Date.parse(text)) && new Date(text).toUTCString() === text || "an HTTP-date such as \"Wed, 30 Jun 2027 00:00:00 GMT\"")
)

export const AgentSettings = Schema.Struct({
  /** Sent as `Sunset` on the deprecated agent chat path. */
  legacyChatSunset: Schema.optionalWith(HttpDate, { default: () => LEGACY_AGENT_CHAT_SUNSET })
})

/** Monitoring's per-call records and buckets (layers/monitoring/CallStatsPg.ts) and how long they are kept. */
export const MonitoringSettings = Schema.Struct({
  /** How often each process writes its call records and buckets (what it holds meanwhile is lost if it is killed). */
  flushMillis: Schema.optionalWith(PositiveInt, { default: () => 1000 }),
  /** Events older than this are deleted (receipts, the billing record, never are). */
  eventRetentionDays: Schema.optionalWith(PositiveInt, { default: () => 90 }),
  /** Per-call records and hour buckets older than this are deleted (hour buckets: never before 31 days, the longest window). */
  callRetentionDays: Schema.optionalWith(PositiveInt, { default: () => 30 }),
  /** How often each process runs the retention job. */
  retentionIntervalSeconds: Schema.optionalWith(PositiveInt, { default: () => 600 }),
  /** Rows a retention statement deletes at most (a turn for other work between two). */
  retentionBatch: Schema.optionalWith(PositiveInt, { default: () => 1000 })
})

export const monitoringDefaults = Schema.decodeSync(MonitoringSettings)({})
