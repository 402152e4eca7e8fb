/**
 * The token-bucket arithmetic every store does (in TypeScript here, in SQL in
 * migration 0008, in Lua in RateLimitStoreRedis): a bucket holds at most
 * `limit` tokens and refills `limit` per `windowMs`, continuously.
 */
import type { Bucket, WindowState } from "../../services/RateLimiter.ts"

/** Tokens in a bucket that held `tokens` at `atMs`, refilled up to `nowMs`. */
export const refilled = (bucket: Bucket, tokens: number, atMs: number, nowMs: number) =>
  Math.min(bucket.limit, tokens + Math.max(0, nowMs - atMs) * bucket.limit / bucket.windowMs)

/** Below this, a difference is the floating point's, not the bucket's. */
const EPSILON = 1e-6

/** How long until `available` grows to `wanted` (0 when it is there), in whole milliseconds. */
export const msUntil = (bucket: Bucket, available: number, wanted: number) =>
  available >= wanted ? 0 : Math.ceil((wanted - available) * bucket.windowMs / bucket.limit - EPSILON)

/** The caller's view of a bucket holding `available`: whole tokens left, time until full. */
export const windowState = (bucket: Bucket, available: number): WindowState => ({
  limit: bucket.limit,
  remaining: Math.max(0, Math.floor(available + EPSILON)),
  resetMs: msUntil(bucket, available, bucket.limit)
})
