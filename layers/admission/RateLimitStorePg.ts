/**
 * Rate-limit buckets and concurrency permits in PostgreSQL (migration 0008),
 * shared by every gateway process on the database: a count (a batch of one
 * key's takes and corrections, migration 0019) is one call of
 * `svc_rate_count`, a batch of one account's permits (given back and asked
 * for, migration 0020) one call of `svc_permits`, and the renewal of every
 * permit a process holds one statement. While the database cannot be
 * reached, a limited call gets the database's 503 (src/http/Edge.ts).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { RateLimitStore } from "../../services/RateLimiter.ts"
import { PgPool, poolStatements } from "../storage/pgPool.ts"

/** A database failure is a defect, as for every other query of a request: an outage becomes the edge's 503. */
const unavailable = Effect.orDie

/** A float8[] as the driver returns it (an array of numbers, or its text form). */
const numbers = (value: unknown): ReadonlyArray<number> =>
  Array.isArray(value) ? value.map(Number) : String(value).replace(/[{}]/g, "").split(",").map(Number)

/** A boolean[] as the driver returns it (an array of booleans, or its text form). */
const booleans = (value: unknown): ReadonlyArray<boolean> =>
  Array.isArray(value)
    ? value.map((item) => item === true || item === "t")
    : String(value).replace(/[{}]/g, "").split(",").map((item) => item === "t" || item === "true")

/** $1 keys, $2 limits, $3 windows, $4 kinds, $5 amounts, $6 now (migration 0019). */
const COUNT = "SELECT * FROM svc_rate_count($1::text[], $2::float8[], $3::float8[], $4::int[], $5::float8[], $6)"

/** $1 the account, $2 its cap, $3 permits given back, $4 asked for, $5 now, $6 their expiry (migration 0020). */
const PERMITS = "SELECT svc_permits($1, $2, $3::text[], $4::text[], $5, $6) AS granted"

export const RateLimitStorePg = Layer.effect(
  RateLimitStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // A call's count and permit run on the pool directly, as the ledger's statements do (pgPool.ts).
    const onPool = poolStatements(yield* PgPool)
    return RateLimitStore.of({
      count: (buckets, steps, nowMs) => {
        const n = buckets.length
        const kinds = steps.map((step) => step._tag === "take" ? 0 : step.bucket + 1)
        const amounts = steps.flatMap((step) =>
          step._tag === "take" ? step.amounts : buckets.map((_, i) => i === step.bucket ? step.delta : 0)
        )
        return onPool<{ ok: unknown; available: unknown }>(COUNT, [
          buckets.map((b) => b.key),
          buckets.map((b) => b.limit),
          buckets.map((b) => b.windowMs),
          kinds,
          amounts,
          Math.round(nowMs)
        ]).pipe(
          Effect.map(([row]) => {
            const oks = booleans(row!.ok)
            const after = numbers(row!.available)
            return steps.map((_, s) => ({ ok: oks[s]!, available: after.slice(s * n, s * n + n) }))
          }),
          unavailable
        )
      },
      permits: (key, limit, step, nowMs, expiresMs) =>
        onPool<{ granted: unknown }>(PERMITS, [key, limit, step.release, step.acquire, Math.round(nowMs), Math.round(expiresMs)]).pipe(
          Effect.map(([row]) => booleans(row!.granted)),
          unavailable
        ),
      renew: (held, expiresMs) =>
        sql`
          UPDATE rate_limit_permits p SET expires_ms = ${Math.round(expiresMs)}
          FROM unnest(${held.map((entry) => entry.key)}::text[], ${held.map((entry) => entry.permit)}::text[]) AS h(key, permit)
          WHERE p.key = h.key AND p.permit = h.permit`.pipe(Effect.asVoid, unavailable)
    })
  })
)
