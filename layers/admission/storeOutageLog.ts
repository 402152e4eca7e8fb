/**
 * The rate limiter's word on its store's outages (RateLimiterLive.ts): a
 * warning when the store becomes unreachable and one when it is back, not
 * one per refused call in between.
 */
import { Effect } from "effect"
import type { StoreUnavailable } from "../../services/RateLimiter.ts"

/** Says once when the store becomes unreachable and once when it is back, not on every call in between. */
export const outageLog = () => {
  let down = false
  return {
    failed: (error: StoreUnavailable) =>
      Effect.zipRight(
        down ? Effect.void : Effect.logWarning(
          `rate-limit store unavailable: ${String((error.cause as Error)?.message ?? error.cause).slice(0, 200)}`
        ),
        Effect.sync(() => void (down = true))
      ),
    succeeded: Effect.suspend(() =>
      down ? Effect.zipRight(Effect.logWarning("rate-limit store is back"), Effect.sync(() => void (down = false))) : Effect.void
    )
  }
}
