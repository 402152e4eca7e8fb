/**
 * One RateLimitStore contract, three stores: in memory, in PostgreSQL (a
 * fresh database: PGlite, or PostgreSQL with DATABASE_URL) and in Redis
 * (127.0.0.1:6379, under a key prefix of this run that is deleted after; the
 * server is never flushed).
 */
import { Effect, Layer } from "effect"
import { Redis } from "ioredis"
import { RateLimitStoreMemory } from "../layers/admission/RateLimitStoreMemory.ts"
import { RateLimitStorePg } from "../layers/admission/RateLimitStorePg.ts"
import { makeRedisStore } from "../layers/admission/RateLimitStoreRedis.ts"
import { RateLimitStore } from "../services/RateLimiter.ts"
import { freshStorage } from "./support/moneyLayers.ts"
import { rateLimitStoreContract } from "./support/rateLimitStoreContract.ts"
import { dropPrefix, TEST_REDIS_URL, testPrefix } from "./support/redis.ts"

const redisStore = Layer.scoped(
  RateLimitStore,
  Effect.gen(function*() {
    const prefix = testPrefix()
    const redis = yield* Effect.acquireRelease(
      Effect.sync(() => new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 })),
      (redis) => Effect.promise(() => dropPrefix(redis, prefix).then(() => redis.quit()))
    )
    return makeRedisStore(redis, prefix)
  })
)

rateLimitStoreContract({ name: "memory", layer: RateLimitStoreMemory })
rateLimitStoreContract({ name: "PostgreSQL", layer: RateLimitStorePg.pipe(Layer.provide(freshStorage({}))) })
rateLimitStoreContract({ name: "Redis", layer: redisStore })
