/**
 * Rate limits: per key requests and tokens per minute (token buckets that
 * refill continuously, as OpenAI describes its own), and a cap on an
 * account's concurrent calls (permits with a lease). Counted in a store
 * shared by every gateway process (PostgreSQL or Redis), or in the process on
 * the embedded database. The state of the current request's windows is left
 * in `currentRateLimits`, for the edge to send as `x-ratelimit-*` headers.
 */
import { Context, Data, type Effect, type Fiber, FiberRef, type Scope } from "effect"
import { globalValue } from "effect/GlobalValue"
import type { RateLimited, ServiceUnavailable } from "./ApiError.ts"
import type { Principal } from "./ApiKeys.ts"

/** The largest limit or amount accepted anywhere (PostgreSQL `integer`). */
export const MAX_LIMIT = 2_147_483_647

/** One window as the caller sees it: `remaining` now, and how long until it is full again. */
export interface WindowState {
  readonly limit: number
  readonly remaining: number
  readonly resetMs: number
}

/** The windows of the key that is calling, as far as this request has counted them. */
export interface RateLimitStatus {
  requests?: WindowState
  tokens?: WindowState
}

/** The current request's status cell: set empty by the edge, filled by the limiter. */
export const currentRateLimits = globalValue(
  "svc/currentRateLimits",
  () => FiberRef.unsafeMake<RateLimitStatus | null>(null)
)

/** An admitted call's count: its token estimate is corrected to what it used once known. */
export interface RateLimitTicket {
  /** Replaces the estimate counted at admission with `tokens` (input + output). */
  readonly settle: (tokens: number) => Effect.Effect<void>
}

export class RateLimiter extends Context.Tag("svc/RateLimiter")<RateLimiter, {
  /**
   * Counts a call of `principal` estimated at `tokens` against its limits, or refuses it. A
   * permit of the account's concurrency cap is held until the scope closes, however the call ends.
   * Given `fiber`, the one the caller runs a step of now, it counts when called, in that step: an
   * answer known at once is then an Exit (services/atOnce.ts).
   */
  readonly admit: (
    principal: Principal,
    tokens: number,
    fiber?: Fiber.RuntimeFiber<unknown, unknown>
  ) => Effect.Effect<RateLimitTicket, RateLimited | ServiceUnavailable, Scope.Scope>
}>() {}

/** A token bucket: `limit` tokens, refilled evenly over `windowMs`. */
export interface Bucket {
  readonly key: string
  readonly limit: number
  readonly windowMs: number
}

/** What a take found: whether every bucket had its amount, and what each holds now. */
export interface Taken {
  readonly ok: boolean
  /** Tokens available in each bucket after the take (before it, when refused); may be negative (debt). */
  readonly available: ReadonlyArray<number>
}

/**
 * One step of a key's count: a call's take (its amount of each of the key's buckets, all or none),
 * or a correction of one bucket (`delta` more taken; negative gives back, up to the limit).
 */
export type CountStep =
  | { readonly _tag: "take"; readonly amounts: ReadonlyArray<number> }
  | { readonly _tag: "adjust"; readonly bucket: number; readonly delta: number }

/** The store the limiter counts in; every operation is atomic across processes sharing it. */
export class RateLimitStore extends Context.Tag("svc/RateLimitStore")<RateLimitStore, {
  /**
   * Counts `steps` against `buckets`, in order, as one atomic operation at `nowMs`: a take takes its
   * amount of every bucket, or of none if any falls short; an adjustment may leave a bucket in debt.
   * Answers each step's outcome (an adjustment always fits) with what each bucket holds after it.
   */
  readonly count: (
    buckets: ReadonlyArray<Bucket>,
    steps: ReadonlyArray<CountStep>,
    nowMs: number
  ) => Effect.Effect<ReadonlyArray<Taken>, StoreUnavailable>
  /**
   * One account's permits (under `key`) in one atomic step: the permits in `release` are given
   * back, then those in `acquire` are granted in order while fewer than `limit` unexpired ones
   * are held, each expiring at `expiresMs`. Answers, for each of `acquire`, whether it was granted.
   */
  readonly permits: (
    key: string,
    limit: number,
    step: { readonly release: ReadonlyArray<string>; readonly acquire: ReadonlyArray<string> },
    nowMs: number,
    expiresMs: number
  ) => Effect.Effect<ReadonlyArray<boolean>, StoreUnavailable>
  /** Extends the leases of held permits to `expiresMs` (a permit no longer held stays gone). */
  readonly renew: (
    held: ReadonlyArray<{ readonly key: string; readonly permit: string }>,
    expiresMs: number
  ) => Effect.Effect<void, StoreUnavailable>
}>() {}

/** The store cannot be reached. */
export class StoreUnavailable extends Data.TaggedError("StoreUnavailable")<{ readonly cause: unknown }> {}
