/**
 * Rate-limit buckets and concurrency permits in this process: the store on
 * the embedded database (one process owns it) and in unit tests. Same
 * answers as the shared stores (test/rateLimitStoreContract.test.ts).
 */
import { randomUUID } from "node:crypto"
import { Effect, Layer, Option } from "effect"
import { RateLimitStore } from "../../services/RateLimiter.ts"
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
    take: (wanted, amounts, nowMs) =>
      Effect.sync(() => {
        const states = wanted.map((bucket) => stateOf(bucket.key, bucket.limit, nowMs))
        const available = wanted.map((bucket, i) => refilled(bucket, states[i]!.tokens, states[i]!.atMs, nowMs))
        const ok = available.every((tokens, i) => tokens >= amounts[i]!)
        const after = ok ? available.map((tokens, i) => tokens - amounts[i]!) : available
        states.forEach((state, i) => {
          state.tokens = after[i]!
          state.atMs = Math.max(state.atMs, nowMs)
        })
        return { ok, available: after }
      }),
    adjust: (bucket, delta, nowMs) =>
      Effect.sync(() => {
        const state = stateOf(bucket.key, bucket.limit, nowMs)
        state.tokens = Math.min(bucket.limit, refilled(bucket, state.tokens, state.atMs, nowMs) - delta)
        state.atMs = Math.max(state.atMs, nowMs)
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
