/**
 * The `x-ratelimit-*` headers as OpenAI sends them: for each limited window
 * (`requests`, `tokens`) its limit, what remains, and the time until it is
 * full again, written like "1s", "6m0s" or "120ms".
 */
import type { RateLimitStatus } from "../../services/RateLimiter.ts"

/** A duration as OpenAI writes a reset: milliseconds under a second, else `[<m>m]<s>s`. */
export const formatReset = (ms: number): string => {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(3))}s`
  const seconds = Math.ceil(ms / 1000)
  return `${Math.floor(seconds / 60)}m${seconds % 60}s`
}

/**
 * Adds the headers of a request's rate-limit status to `headers` (none for a key with no limits).
 * Written in place, each name spelled out: computed names and spreads made a slow dictionary-mode
 * object on every call (docs/performance.md).
 */
export const addRateLimitHeaders = (headers: Record<string, string>, status: RateLimitStatus): Record<string, string> => {
  const { requests, tokens } = status
  if (requests !== undefined) {
    headers["x-ratelimit-limit-requests"] = String(requests.limit)
    headers["x-ratelimit-remaining-requests"] = String(requests.remaining)
    headers["x-ratelimit-reset-requests"] = formatReset(requests.resetMs)
  }
  if (tokens !== undefined) {
    headers["x-ratelimit-limit-tokens"] = String(tokens.limit)
    headers["x-ratelimit-remaining-tokens"] = String(tokens.remaining)
    headers["x-ratelimit-reset-tokens"] = formatReset(tokens.resetMs)
  }
  return headers
}

/** The headers of a request's rate-limit status (none for a key with no limits). */
export const rateLimitHeaders = (status: RateLimitStatus): Record<string, string> => addRateLimitHeaders({}, status)
