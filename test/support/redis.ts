/**
 * Redis for tests: the shared server at 127.0.0.1:6379, used only under a
 * key prefix of the test's own, which is deleted afterwards (the server is
 * never flushed: other suites use it too).
 */
import { randomBytes } from "node:crypto"
import { Redis } from "ioredis"

export const TEST_REDIS_URL = "redis://127.0.0.1:6379"

/** A key prefix no other test uses. */
export const testPrefix = () => `svc:test:${randomBytes(6).toString("hex")}:`

/** Deletes every key under `prefix` (only those). */
export const dropPrefix = async (redis: Redis, prefix: string) => {
  let cursor = "0"
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000)
    if (keys.length > 0) await redis.del(...keys)
    cursor = next
  } while (cursor !== "0")
}

/** Deletes the keys under each prefix, on a connection of its own. */
export const dropPrefixes = async (prefixes: ReadonlyArray<string>) => {
  if (prefixes.length === 0) return
  const redis = new Redis(TEST_REDIS_URL)
  try {
    for (const prefix of prefixes) await dropPrefix(redis, prefix)
  } finally {
    await redis.quit()
  }
}
