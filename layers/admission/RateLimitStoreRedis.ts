/**
 * Rate-limit buckets and concurrency permits in Redis (`REDIS_URL`), shared
 * by every gateway process using it. Each operation is one Lua script, so it
 * is atomic; a bucket is a hash (tokens, time) that expires once it would be
 * full again, an account's permits a sorted set scored by lease expiry (the
 * set expires with its last lease).
 */
import { randomUUID } from "node:crypto"
import { Effect, Layer, Option, Redacted, Runtime } from "effect"
import { Redis } from "ioredis"
import { AppConfig } from "../../services/Config.ts"
import { RateLimitStore, StoreUnavailable } from "../../services/RateLimiter.ts"

/** KEYS: buckets; ARGV: now, then limit, window and amount of each bucket. Returns fits, then each bucket's tokens. */
const TAKE = `
local now = tonumber(ARGV[1])
local left, at, fits = {}, {}, true
for i, key in ipairs(KEYS) do
  local limit, window, amount = tonumber(ARGV[i * 3 - 1]), tonumber(ARGV[i * 3]), tonumber(ARGV[i * 3 + 1])
  local state = redis.call("HMGET", key, "tokens", "at")
  local tokens, since = tonumber(state[1]) or limit, tonumber(state[2]) or now
  left[i] = math.min(limit, tokens + math.max(0, now - since) * limit / window)
  at[i] = math.max(since, now)
  if left[i] < amount then fits = false end
end
local out = { fits and 1 or 0 }
for i, key in ipairs(KEYS) do
  local limit, window, amount = tonumber(ARGV[i * 3 - 1]), tonumber(ARGV[i * 3]), tonumber(ARGV[i * 3 + 1])
  if fits then left[i] = left[i] - amount end
  redis.call("HSET", key, "tokens", tostring(left[i]), "at", tostring(at[i]))
  redis.call("PEXPIRE", key, math.ceil((limit - left[i]) * window / limit) + 1000)
  out[i + 1] = tostring(left[i])
end
return out`

/** KEYS: the bucket; ARGV: limit, window, delta, now. */
const ADJUST = `
local limit, window, delta, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local state = redis.call("HMGET", KEYS[1], "tokens", "at")
local tokens, since = tonumber(state[1]) or limit, tonumber(state[2]) or now
local left = math.min(limit, math.min(limit, tokens + math.max(0, now - since) * limit / window) - delta)
redis.call("HSET", KEYS[1], "tokens", tostring(left), "at", tostring(math.max(since, now)))
redis.call("PEXPIRE", KEYS[1], math.ceil((limit - left) * window / limit) + 1000)
return 1`

/** KEYS: the permit set; ARGV: now, limit, expiry, permit. */
const ACQUIRE = `
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[1])
if redis.call("ZCARD", KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call("ZADD", KEYS[1], ARGV[3], ARGV[4])
redis.call("PEXPIREAT", KEYS[1], redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")[2])
return 1`

/** KEYS: the permit set; ARGV: expiry, permit. */
const RENEW = `
if redis.call("ZADD", KEYS[1], "XX", "CH", ARGV[1], ARGV[2]) == 1 then
  redis.call("PEXPIREAT", KEYS[1], redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")[2])
end
return 1`

/** The store on a Redis client; every key starts with `prefix`. */
export const makeRedisStore = (redis: Redis, prefix: string) => {
  const run = <A>(command: () => Promise<A>) =>
    Effect.tryPromise({ try: command, catch: (cause) => new StoreUnavailable({ cause }) })
  const permits = (key: string) => `${prefix}permits:${key}`
  return RateLimitStore.of({
    take: (buckets, amounts, nowMs) =>
      run(() =>
        redis.eval(
          TAKE,
          buckets.length,
          ...buckets.map((bucket) => `${prefix}${bucket.key}`),
          nowMs,
          ...buckets.flatMap((bucket, i) => [bucket.limit, bucket.windowMs, amounts[i]!])
        ) as Promise<[number, ...Array<string>]>
      ).pipe(Effect.map(([fits, ...left]) => ({ ok: fits === 1, available: left.map(Number) }))),
    adjust: (bucket, delta, nowMs) =>
      run(() => redis.eval(ADJUST, 1, `${prefix}${bucket.key}`, bucket.limit, bucket.windowMs, delta, nowMs)).pipe(
        Effect.asVoid
      ),
    acquire: (key, limit, nowMs, expiresMs) => {
      const permit = randomUUID()
      return run(() => redis.eval(ACQUIRE, 1, permits(key), nowMs, limit, expiresMs, permit)).pipe(
        Effect.map((got) => got === 1 ? Option.some(permit) : Option.none())
      )
    },
    renew: (key, permit, expiresMs) =>
      run(() => redis.eval(RENEW, 1, permits(key), expiresMs, permit)).pipe(Effect.asVoid),
    release: (key, permit) => run(() => redis.zrem(permits(key), permit)).pipe(Effect.asVoid)
  })
}

/** A Redis connection for the life of the layer; it reconnects by itself and logs once per change of state. */
export const redisClient = (url: string) =>
  Effect.acquireRelease(
    Effect.map(Effect.runtime<never>(), (runtime) => {
      const log = (message: string) => Runtime.runFork(runtime)(Effect.logWarning(message))
      const redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: true })
      let down = false
      redis.on("error", (error: Error) => {
        if (!down) log(`redis unavailable for rate limits: ${error.message.slice(0, 200)}`)
        down = true
      })
      redis.on("ready", () => {
        if (down) log("redis for rate limits is back")
        down = false
      })
      return redis
    }),
    (redis) => Effect.promise(() => redis.quit().catch(() => "closed"))
  )

export const RateLimitStoreRedis = Layer.scoped(
  RateLimitStore,
  Effect.gen(function*() {
    const { file, redisUrl } = yield* AppConfig
    const redis = yield* redisClient(Redacted.value(redisUrl!))
    return makeRedisStore(redis, file.limits.redisKeyPrefix)
  })
)
