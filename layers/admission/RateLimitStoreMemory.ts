/**
 * Rate-limit buckets and concurrency permits in this process: the store on
 * the embedded database (one process owns it) and in unit tests. Same
 * answers as the shared stores (test/rateLimitStoreContract.test.ts).
 */
import { Effect, Layer } from "effect"
import { RateLimitStore, type Taken } from "../../services/RateLimiter.ts"
import { refilled } from "./tokenBucket.ts"

/** Enough buckets for every active key of a large install; past it the oldest are forgotten (they were full). */
const MAX_BUCKETS = 100_000

export const RateLimitStoreMemory = Layer.sync(RateLimitStore, () => {
  const buckets = new Map<string, { tokens: number; atMs: number }>()
  const permitSets = new Map<string, Map<string, number>>()
  const stateOf = (key: string, limit: number, nowMs: number) => {
    let state = buckets.get(key)
    if (state === undefined) {
      if (buckets.size >= MAX_BUCKETS) buckets.delete(buckets.keys().next().value!)
      state = { tokens: limit, atMs: nowMs }
      buckets.set(key, state)
    }
    return state
  }
  return RateLimitStore.of({
    count: (wanted, steps, nowMs) =>
      Effect.sync(() => {
        const states = wanted.map((bucket) => stateOf(bucket.key, bucket.limit, nowMs))
        const left = wanted.map((bucket, i) => refilled(bucket, states[i]!.tokens, states[i]!.atMs, nowMs))
        const outcomes = steps.map((step): Taken => {
          if (step._tag === "adjust") {
            left[step.bucket] = Math.min(wanted[step.bucket]!.limit, left[step.bucket]! - step.delta)
            return { ok: true, available: [...left] }
          }
          const ok = left.every((tokens, i) => tokens >= step.amounts[i]!)
          if (ok) step.amounts.forEach((amount, i) => void (left[i] = left[i]! - amount))
          return { ok, available: [...left] }
        })
        states.forEach((state, i) => {
          state.tokens = left[i]!
          state.atMs = Math.max(state.atMs, nowMs)
        })
        return outcomes
      }),
    permits: (key, limit, step, nowMs, expiresMs) =>
      Effect.sync(() => {
        const held = permitSets.get(key) ?? new Map<string, number>()
        for (const permit of step.release) held.delete(permit)
        for (const [permit, expires] of held) if (expires <= nowMs) held.delete(permit)
        const granted = step.acquire.map((permit) => {
          if (held.size >= limit) return false
          held.set(permit, expiresMs)
          return true
        })
        if (held.size === 0) permitSets.delete(key)
        else permitSets.set(key, held)
        return granted
      }),
    renew: (entries, expiresMs) =>
      Effect.sync(() => {
        for (const { key, permit } of entries) {
          const held = permitSets.get(key)
          if (held?.has(permit) === true) held.set(permit, expiresMs)
        }
      })
  })
})
