/**
 * The `x-ratelimit-*` headers as OpenAI sends them: for each limited window
 * (`requests`, `tokens`) its limit, what remains, and the time until it is
 * full again, written like "1s", "6m0s" or "120ms".
 */
import type { RateLimitStatus, WindowState } from "../../services/RateLimiter.ts"

/** A duration as OpenAI writes a reset: milliseconds under a second, else `[<m>m]<s>s`. */
export const formatReset = (ms: number): string => {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(3))}s`
  const seconds = Math.ceil(ms / 1000)
  return `${Math.floor(seconds / 60)}m${seconds % 60}s`
}

const trio = (name: "requests" | "tokens", state: WindowState): Record<string, string> => ({
  [`x-ratelimit-limit-${name}`]: String(state.limit),
  [`x-ratelimit-remaining-${name}`]: String(state.remaining),
  [`x-ratelimit-reset-${name}`]: formatReset(state.resetMs)
})

/** The headers of a request's rate-limit status (none for a key with no limits). */
export const rateLimitHeaders = (status: RateLimitStatus): Record<string, string> => ({
  ...(status.requests === undefined ? {} : trio("requests", status.requests)),
  ...(status.tokens === undefined ? {} : trio("tokens", status.tokens))
})
