/**
 * Where rate limits are counted: Redis when `REDIS_URL` is set, else the
 * PostgreSQL database when `DATABASE_URL` is set (both shared by every
 * gateway process using them), else this process (the embedded database has
 * one process). The limiter itself, over that store, is `RateLimits`.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { AppConfig } from "../../services/Config.ts"
import type { RateLimitStore } from "../../services/RateLimiter.ts"
import { RateLimiterLive } from "./RateLimiterLive.ts"
import { RateLimitStoreMemory } from "./RateLimitStoreMemory.ts"
import { RateLimitStorePg } from "./RateLimitStorePg.ts"
import type { PgPool } from "../storage/pgPool.ts"
import { RateLimitStoreRedis } from "./RateLimitStoreRedis.ts"

export const RateLimitStoreLive = Layer.unwrapEffect(
  Effect.map(AppConfig, ({ databaseUrl, redisUrl }): Layer.Layer<RateLimitStore, never, AppConfig | SqlClient.SqlClient | PgPool> =>
    redisUrl !== undefined ? RateLimitStoreRedis : databaseUrl !== undefined ? RateLimitStorePg : RateLimitStoreMemory)
)

/** The limiter counting in this process: the unit tests' stages. */
export const RateLimitsMemory = RateLimiterLive.pipe(Layer.provide(RateLimitStoreMemory))

/** The rate limiter over the store the deployment calls for. */
export const RateLimits = RateLimiterLive.pipe(Layer.provide(RateLimitStoreLive))
