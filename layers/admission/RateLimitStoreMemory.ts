/**
 * Rate-limit buckets and concurrency permits in this process: the store on
 * the embedded database (one process owns it) and in unit tests. Same
 * answers as the shared stores (test/rateLimitStoreContract.test.ts).
 */
import { randomUUID } from "node:crypto"
import { Effect, Layer, Option } from "effect"
import { RateLimitStore, type Taken } from "../../services/RateLimiter.ts"
import { refilled } from "./tokenBucket.ts"

/** Enough buckets for every active key of a large install; past it the oldest are forgotten (they were full). */
const MAX_BUCKETS = 100_000

export const RateLimitStoreMemory = Layer.sync(RateLimitStore, () => {
  const buckets = new Map<string, { tokens: number; atMs: number }>()
  const permits = new Map<string, Map<string, number>>()
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
    acquire: (key, limit, nowMs, expiresMs) =>
      Effect.sync(() => {
        const held = permits.get(key) ?? new Map<string, number>()
        permits.set(key, held)
        for (const [permit, expires] of held) if (expires <= nowMs) held.delete(permit)
        if (held.size >= limit) return Option.none()
        const permit = randomUUID()
        held.set(permit, expiresMs)
        return Option.some(permit)
      }),
    renew: (key, permit, expiresMs) =>
      Effect.sync(() => {
        const held = permits.get(key)
        if (held?.has(permit) === true) held.set(permit, expiresMs)
      }),
    release: (key, permit) =>
      Effect.sync(() => {
        const held = permits.get(key)
        held?.delete(permit)
        if (held?.size === 0) permits.delete(key)
      })
  })
})
