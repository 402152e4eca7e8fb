/**
 * Rate-limit buckets and concurrency permits in PostgreSQL (migration 0008),
 * shared by every gateway process on the database: a take is one call of
 * `svc_rate_take`, a permit one call of `svc_permit_acquire`; an adjustment,
 * a renewal and a release are one statement each. While the database cannot
 * be reached, a limited call gets the database's 503 (src/http/Edge.ts).
 */
import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import { RateLimitStore } from "../../services/RateLimiter.ts"

/** A database failure is a defect, as for every other query of a request: an outage becomes the edge's 503. */
const unavailable = Effect.orDie

/** A float8[] as the driver returns it (an array of numbers, or its text form). */
const numbers = (value: unknown): ReadonlyArray<number> =>
  Array.isArray(value) ? value.map(Number) : String(value).replace(/[{}]/g, "").split(",").map(Number)

export const RateLimitStorePg = Layer.effect(
  RateLimitStore,
  Effect.map(SqlClient.SqlClient, (sql) =>
    RateLimitStore.of({
      take: (buckets, amounts, nowMs) =>
        sql<{ ok: boolean; available: unknown }>`
          SELECT * FROM svc_rate_take(
            ${buckets.map((b) => b.key)}::text[], ${buckets.map((b) => b.limit)}::float8[],
            ${buckets.map((b) => b.windowMs)}::float8[], ${amounts}::float8[], ${Math.round(nowMs)})`.pipe(
          Effect.map(([row]) => ({ ok: row!.ok, available: numbers(row!.available) })),
          unavailable
        ),
      adjust: (bucket, delta, nowMs) =>
        sql`
          INSERT INTO rate_limit_buckets AS b (key, tokens, updated_ms)
          VALUES (${bucket.key}, least(${bucket.limit}::float8, ${bucket.limit}::float8 - ${delta}::float8), ${Math.round(nowMs)})
          ON CONFLICT (key) DO UPDATE SET
            tokens = least(${bucket.limit}::float8,
              least(${bucket.limit}::float8,
                b.tokens + greatest(0, ${Math.round(nowMs)}::bigint - b.updated_ms) * ${bucket.limit}::float8 / ${bucket.windowMs}::float8)
              - ${delta}::float8),
            updated_ms = greatest(b.updated_ms, ${Math.round(nowMs)}::bigint)`.pipe(Effect.asVoid, unavailable),
      acquire: (key, limit, nowMs, expiresMs) => {
        const permit = randomUUID()
        return sql<{ ok: boolean }>`
          SELECT svc_permit_acquire(${key}, ${permit}, ${limit}, ${Math.round(nowMs)}, ${Math.round(expiresMs)}) AS ok`.pipe(
          Effect.map(([row]) => row!.ok ? Option.some(permit) : Option.none()),
          unavailable
        )
      },
      renew: (key, permit, expiresMs) =>
        sql`UPDATE rate_limit_permits SET expires_ms = ${Math.round(expiresMs)} WHERE key = ${key} AND permit = ${permit}`
          .pipe(Effect.asVoid, unavailable),
      release: (key, permit) =>
        sql`DELETE FROM rate_limit_permits WHERE key = ${key} AND permit = ${permit}`.pipe(Effect.asVoid, unavailable)
    }))
)
