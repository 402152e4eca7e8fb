/**
 * A call the rate limiter refuses (429): what it says, and when to retry.
 * The store counted the key's buckets and found `available` short of what
 * the call still needed (`rest`); the refusal names each bucket that was
 * short and waits for the last of them to refill.
 */
import { RateLimited } from "../../services/ApiError.ts"
import type { Bucket } from "../../services/RateLimiter.ts"
import { msUntil } from "./tokenBucket.ts"

/** A 429 naming `what` was reached, to retry after `retryAfterMs` (a second at least). */
export const retryLater = (what: string, retryAfterMs: number) => {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000))
  return new RateLimited({ message: `Rate limit reached: ${what}. Retry after ${seconds} s.`, retryAfterSeconds: seconds })
}

/** The buckets short of `rest`: the limits' names (`rpm`, `tpm`, `rpm+tpm`) for metrics and events, and the 429. */
export const bucketsShort = (
  buckets: ReadonlyArray<Bucket>,
  requests: Bucket | undefined,
  available: ReadonlyArray<number>,
  rest: ReadonlyArray<number>
) => {
  const short = buckets.flatMap((bucket, i) => {
    const ms = msUntil(bucket, available[i]!, rest[i]!)
    return ms > 0 ? [{ bucket, ms }] : []
  })
  const what = short.map(({ bucket }) =>
    bucket === requests ? `${bucket.limit} requests per minute` : `${bucket.limit} tokens per minute`
  ).join(" and ")
  const retryAfterMs = Math.max(0, ...short.map(({ ms }) => ms))
  return {
    limits: short.map(({ bucket }) => (bucket === requests ? "rpm" : "tpm")).join("+") || "rpm",
    retryAfterMs,
    error: retryLater(what || "the key's limits", retryAfterMs)
  }
}
