/**
 * Rate-limit buckets and concurrency permits in Redis (`REDIS_URL`), shared
 * by every gateway process using it. Each operation is one Lua script, so it
 * is atomic; a bucket is a hash (tokens, time) that expires once it would be
 * full again, an account's permits a sorted set scored by lease expiry (the
 * set expires with its last lease).
 */
import { Effect, Layer, Redacted, Runtime } from "effect"
import { Redis } from "ioredis"
import { AppConfig } from "../../services/Config.ts"
import { RateLimitStore, StoreUnavailable } from "../../services/RateLimiter.ts"

/**
 * KEYS: buckets; ARGV: now, then limit and window of each bucket, then each step: its kind (0 a
 * take, else the bucket it corrects) and its amount of each bucket. Returns, step after step,
 * whether it fit, then each bucket's tokens after it.
 */
const COUNT = `
local now, n = tonumber(ARGV[1]), #KEYS
local limit, window, left, at = {}, {}, {}, {}
for i, key in ipairs(KEYS) do
  limit[i], window[i] = tonumber(ARGV[i * 2]), tonumber(ARGV[i * 2 + 1])
  local state = redis.call("HMGET", key, "tokens", "at")
  local tokens, since = tonumber(state[1]) or limit[i], tonumber(state[2]) or now
  left[i] = math.min(limit[i], tokens + math.max(0, now - since) * limit[i] / window[i])
  at[i] = math.max(since, now)
end
local out, p = {}, n * 2 + 2
while p <= #ARGV do
  local kind = tonumber(ARGV[p])
  if kind == 0 then
    local fits = true
    for i = 1, n do if left[i] < tonumber(ARGV[p + i]) then fits = false end end
    if fits then for i = 1, n do left[i] = left[i] - tonumber(ARGV[p + i]) end end
    out[#out + 1] = fits and 1 or 0
  else
    left[kind] = math.min(limit[kind], left[kind] - tonumber(ARGV[p + kind]))
    out[#out + 1] = 1
  end
  for i = 1, n do out[#out + 1] = tostring(left[i]) end
  p = p + n + 1
end
for i, key in ipairs(KEYS) do
  redis.call("HSET", key, "tokens", tostring(left[i]), "at", tostring(at[i]))
  redis.call("PEXPIRE", key, math.ceil((limit[i] - left[i]) * window[i] / limit[i]) + 1000)
end
return out`

/**
 * KEYS: the permit set; ARGV: now, limit, expiry, how many are given back, those, then those asked
 * for. Returns 1 or 0 for each asked for: granted or not.
 */
const PERMITS = `
local now, limit, expiry, given = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
for i = 5, 4 + given do redis.call("ZREM", KEYS[1], ARGV[i]) end
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
local held, out = redis.call("ZCARD", KEYS[1]), {}
for i = 5 + given, #ARGV do
  if held < limit then
    redis.call("ZADD", KEYS[1], expiry, ARGV[i])
    held = held + 1
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if held > 0 then redis.call("PEXPIREAT", KEYS[1], redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")[2]) end
return out`

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
    count: (buckets, steps, nowMs) => {
      const n = buckets.length
      return run(() =>
        redis.eval(
          COUNT,
          n,
          ...buckets.map((bucket) => `${prefix}${bucket.key}`),
          nowMs,
          ...buckets.flatMap((bucket) => [bucket.limit, bucket.windowMs]),
          ...steps.flatMap((step) =>
            step._tag === "take"
              ? [0, ...step.amounts]
              : [step.bucket + 1, ...buckets.map((_, i) => i === step.bucket ? step.delta : 0)]
          )
        ) as Promise<Array<number | string>>
      ).pipe(Effect.map((out) =>
        steps.map((_, s) => ({
          ok: out[s * (n + 1)] === 1,
          available: out.slice(s * (n + 1) + 1, (s + 1) * (n + 1)).map(Number)
        }))
      ))
    },
    permits: (key, limit, step, nowMs, expiresMs) =>
      run(() =>
        redis.eval(PERMITS, 1, permits(key), nowMs, limit, expiresMs, step.release.length, ...step.release, ...step.acquire) as Promise<
          Array<number>
        >
      ).pipe(Effect.map((out) => step.acquire.map((_, i) => out[i] === 1))),
    renew: (held, expiresMs) =>
      run(() => {
        const batch = redis.pipeline()
        for (const { key, permit } of held) batch.eval(RENEW, 1, permits(key), expiresMs, permit)
        return batch.exec()
      }).pipe(Effect.asVoid)
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
