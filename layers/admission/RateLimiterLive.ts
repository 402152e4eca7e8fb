/**
 * The rate limiter over a `RateLimitStore`. A call of a key counts one
 * request and its token estimate against the key's per-minute buckets (its
 * own `rpm`/`tpm`, else the config's `limits.defaults`); both must fit or
 * neither is taken. An estimate larger than the whole bucket is counted as
 * the whole bucket (such a call waits for a full bucket, then leaves it in
 * debt once its real usage is counted). The account's cap on concurrent
 * calls (its own, else the config's) is a permit with a lease, renewed while the call runs and released
 * when its scope closes; a process that dies leaves permits that expire.
 * The bootstrap operator key (no account) is never limited.
 */
import { Clock, Effect, Exit, type Fiber, FiberSet, Layer, Option, type Scope } from "effect"
import { type RateLimited, ServiceUnavailable } from "../../services/ApiError.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import { AppConfig } from "../../services/Config.ts"
import { EventLog } from "../../services/EventLog.ts"
import { Metrics } from "../../services/Metrics.ts"
import { isAnswered, mapAtOnce, thenAtOnce } from "../../services/atOnce.ts"
import {
  type Bucket,
  type CountStep,
  currentRateLimits,
  MAX_LIMIT,
  RateLimiter,
  type RateLimitTicket,
  RateLimitStore,
  type StoreUnavailable
} from "../../services/RateLimiter.ts"
import { makeSerialBatches } from "../storage/serialBatches.ts"
import { claim, covers, type KeyLease, leaseCalls, makeCountLeases, perCall, runsLow, seen, settle, unclaim, visible } from "./countLeases.ts"
import { makePermits } from "./permits.ts"
import { outageLog } from "./storeOutageLog.ts"
import { bucketsShort, retryLater } from "./limitRefusal.ts"
import { windowState } from "./tokenBucket.ts"
import { clockOf, inFiberStep } from "../telemetry/stageSpan.ts"

const MINUTE_MS = 60_000

/** Steps one count may carry; more wait for the next. */
const MAX_BATCH = 64

/**
 * How long a correction or a permit given back waits for the key's (the account's) next call, to
 * be counted in one store operation with it (at one connection: one round trip a call, not two),
 * before it is counted alone. Other processes see it that much later.
 */
const LINGER_MS = 50

/** A busy key's lease is taken again, in the background, once it covers fewer calls than this. */
const REFILL_BELOW_CALLS = 8

/** How often leases (of tokens and of permits) are looked at. */
export const SWEEP_MS = 1000

/**
 * Sweeps a key's lease of tokens (an account's idle permits) may go unused before it goes back to
 * the store: a key called every few seconds keeps its lease, and its calls need no store operation.
 */
export const IDLE_SWEEPS = 5

/** A step of a key's count, with the buckets it is counted against. */
interface Counted {
  readonly buckets: ReadonlyArray<Bucket>
  readonly step: CountStep
}

const unlimited: RateLimitTicket = { settle: () => Effect.void }

const refusal = new ServiceUnavailable({
  message: "The gateway cannot count rate limits now; retry shortly.",
  retryAfterSeconds: 1
})

/** A key's buckets (requests first, then tokens; those it has) and the key its counts are batched under. */
interface KeyLimits {
  readonly requests: Bucket | undefined
  readonly tokens: Bucket | undefined
  readonly buckets: ReadonlyArray<Bucket>
  readonly batchKey: string
}

/** A token count as a whole number within bounds; `otherwise` for one that is not a number at all. */
const wholeTokens = (tokens: number, otherwise: number) =>
  Number.isFinite(tokens) ? Math.min(Math.max(0, Math.ceil(tokens)), MAX_LIMIT) : otherwise

export const RateLimiterLive = Layer.scoped(
  RateLimiter,
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    const { file } = yield* AppConfig
    const { defaults, permitLeaseSeconds } = file.limits
    const leaseMs = permitLeaseSeconds * 1000
    const outage = outageLog()
    const metrics = yield* Effect.serviceOption(Metrics)
    const events = yield* Effect.serviceOption(EventLog)
    /** When each key's last `rate_limit.refused` event was written (this process). */
    const lastEvent = new Map<string, number>()
    /**
     * A refusal: counted in the metrics every time, told in the event log at most once a minute per key
     * and process (a caller hammering a limit must not turn each refused call into a database write).
     */
    const refused = (limit: string, principal: Principal, retryAfterMs: number) =>
      Effect.gen(function*() {
        Option.map(metrics, (m) => m.rateLimitRefused(limit))
        if (Option.isNone(events) || principal.accountId === null) return
        const now = yield* Clock.currentTimeMillis
        if (now - (lastEvent.get(principal.keyId) ?? -Infinity) < MINUTE_MS) return
        lastEvent.set(principal.keyId, now)
        if (lastEvent.size > 10_000) lastEvent.clear()
        yield* events.value.record({
          type: "rate_limit.refused",
          accountId: principal.accountId,
          data: { key_id: principal.keyId, limit, retry_after_seconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) }
        }).pipe(Effect.catchAllCause(() => Effect.void)) // the refusal stands even if the log cannot be written
      })

    const permits = yield* makePermits(store, leaseMs, LINGER_MS, SWEEP_MS, IDLE_SWEEPS)
    /** One of the account's concurrent-call permits, held until the scope closes. */
    const permit = (fiber: Fiber.RuntimeFiber<unknown, unknown>, principal: Principal, accountId: string, cap: number) =>
      thenAtOnce(permits.hold(fiber, accountId, cap), (held) =>
        held
          ? Effect.void
          : Effect.zipRight(refused("concurrency", principal, 1000), Effect.fail(retryLater(`${cap} concurrent calls per account`, 1000))))

    /**
     * A key's buckets and its batches' key, made once per principal (a key's principal is kept as long
     * as the key is, and a changed limit makes a new one): not rebuilt, strings and all, on every call.
     */
    const limitsByPrincipal = new WeakMap<Principal, KeyLimits>()
    const limitsOf = (principal: Principal): KeyLimits => {
      const known = limitsByPrincipal.get(principal)
      if (known !== undefined) return known
      const rpm = principal.rpm ?? defaults.rpm
      const tpm = principal.tpm ?? defaults.tpm
      const requests = rpm === undefined ? undefined : { key: `${principal.keyId}:rpm`, limit: rpm, windowMs: MINUTE_MS }
      const tokens = tpm === undefined ? undefined : { key: `${principal.keyId}:tpm`, limit: tpm, windowMs: MINUTE_MS }
      const limits = {
        requests,
        tokens,
        buckets: [requests, tokens].filter((bucket): bucket is Bucket => bucket !== undefined),
        batchKey: `${principal.keyId}:${requests?.limit}:${tokens?.limit}`
      }
      limitsByPrincipal.set(principal, limits)
      return limits
    }

    /**
     * A key's takes and corrections, counted together (group commit): per key and process one count
     * is in flight, and what arrives meanwhile goes in the next, so a busy key costs one store
     * operation per batch instead of two per call, all queued on the same bucket rows. The batch
     * key carries the limits, so every step of a batch is counted against the same buckets.
     */
    const counts = yield* makeSerialBatches(
      (_key: string, items: ReadonlyArray<Counted>) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => store.count(items[0]!.buckets, items.map((item) => item.step), now)).pipe(
          Effect.map((outcomes) => outcomes.map((taken) => Exit.succeed(taken)))
        ),
      MAX_BATCH,
      LINGER_MS
    )

    const leases = makeCountLeases(IDLE_SWEEPS)
    /**
     * Takes `calls` calls' worth (`worth` each) more for the lease, with `rest` (what a call still needs
     * counted) in the same step; the lease holds them if the store granted the whole.
     */
    const leaseMore = (key: string, lease: KeyLease, worth: ReadonlyArray<number>, calls: number, rest: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        lease.refilling = true
        const taken = yield* counts.submit(key, {
          buckets: lease.buckets,
          step: { _tag: "take", amounts: rest.map((amount, i) => amount + calls * worth[i]!) }
        }).pipe(Effect.ensuring(Effect.sync(() => void (lease.refilling = false))))
        seen(lease, taken, yield* Clock.currentTimeMillis)
        if (taken.ok) {
          lease.active = true
          worth.forEach((amount, i) => void (lease.left[i] = lease.left[i]! + calls * amount))
        }
        return taken
      })
    /** Counts what a call's lease did not cover (`rest`), leasing more calls' worth like `amounts` far from the limits. */
    const take = (key: string, lease: KeyLease, amounts: ReadonlyArray<number>, rest: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        const worth = perCall(lease, amounts)
        const calls = leaseCalls(lease, worth)
        if (calls > 0) {
          const taken = yield* leaseMore(key, lease, worth, calls, rest)
          if (taken.ok) return taken
        }
        const taken = yield* counts.submit(key, { buckets: lease.buckets, step: { _tag: "take", amounts: rest } })
        seen(lease, taken, yield* Clock.currentTimeMillis)
        return taken
      })
    /**
     * A lease left with fewer than `REFILL_BELOW_CALLS` calls like this one is taken again in a fiber of
     * its own, as the credit leases are (leasedHolds.ts): a busy key's calls do not wait for the store
     * each time one runs dry. Until that fiber runs, a call that finds the lease dry takes one itself,
     * as before (the fiber then finds it full and stops). Near a limit no lease is taken, as before.
     */
    const refills = yield* FiberSet.make()
    const refillAhead = (key: string, lease: KeyLease, amounts: ReadonlyArray<number>) => {
      if (lease.refilling || lease.refillQueued || !runsLow(lease, amounts, REFILL_BELOW_CALLS)) return Effect.void
      lease.refillQueued = true
      const refill = Effect.suspend(() => {
        lease.refillQueued = false
        if (lease.refilling || !runsLow(lease, amounts, REFILL_BELOW_CALLS)) return Effect.void
        const worth = perCall(lease, amounts)
        const calls = leaseCalls(lease, worth)
        return calls === 0 ? Effect.void : leaseMore(key, lease, worth, calls, worth.map(() => 0))
      })
      // A failure is the next call's to meet: it counts at the store, which says so.
      return FiberSet.run(refills, Effect.catchAllCause(refill, () => Effect.void))
    }
    /** Gives the tokens of idle leases (of every lease when `all`) back to the store. */
    const giveBack = (all: boolean) =>
      Effect.suspend(() =>
        Effect.forEach(leases.sweep(all), ({ buckets, key, left }) =>
          Effect.forEach(left, (tokens, bucket) =>
            tokens > 0 ? counts.send(key, { buckets, step: { _tag: "adjust", bucket, delta: -tokens } }) : Effect.void), {
          discard: true
        })
      )
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(SWEEP_MS), giveBack(false))))
    yield* Effect.addFinalizer(() => giveBack(true))

    /** What a store operation failing means to a call: refused for a moment, the outage said once. */
    const atStore = <A, E>(effect: Effect.Effect<A, E | StoreUnavailable, Scope.Scope>) =>
      isAnswered(effect) && Exit.isSuccess(effect)
        ? effect as Exit.Exit<A>
        : Effect.catchTag(effect, "StoreUnavailable", (error) =>
          Effect.zipRight(outage.failed(error as StoreUnavailable), Effect.fail(refusal)))

    /** The call counted against the key's buckets, from its lease when it covers the call (at once), else at the store. */
    const countCall = (fiber: Fiber.RuntimeFiber<unknown, unknown>, principal: Principal, tokens: number) => {
      const { batchKey, buckets, requests, tokens: tokenBucket } = limitsOf(principal)
      if (buckets.length === 0) return Effect.succeed(unlimited)
      const counted = tokenBucket === undefined ? 0 : Math.min(wholeTokens(tokens, tokenBucket.limit), tokenBucket.limit)
      const amounts = requests === undefined ? [counted] : tokenBucket === undefined ? [1] : [1, counted]

      const lease = leases.of(batchKey, buckets)
      const claimed = claim(lease, amounts)
      const rest = amounts.map((amount, i) => amount - claimed[i]!)
      const taking = covers(lease, rest)
        ? mapAtOnce(refillAhead(batchKey, lease, amounts), () => undefined)
        : atStore(
          take(batchKey, lease, amounts, rest).pipe(
            Effect.onError(() => Effect.sync(() => unclaim(lease, claimed))),
            Effect.tap(() => outage.succeeded)
          )
        )
      return thenAtOnce(taking, (taken): Effect.Effect<RateLimitTicket, RateLimited> => {
        const refusedAtStore = taken !== undefined && !taken.ok
        if (refusedAtStore) unclaim(lease, claimed)
        // The request's status cell (every call passes here).
        const status = fiber.getFiberRef(currentRateLimits)
        if (status !== null) {
          const now = clockOf(fiber).unsafeCurrentTimeMillis()
          buckets.forEach((bucket, i) => {
            status[bucket === requests ? "requests" : "tokens"] = windowState(bucket, visible(lease, i, now))
          })
        }
        if (refusedAtStore) {
          const { error, limits, retryAfterMs } = bucketsShort(buckets, requests, taken.available, rest)
          return Effect.zipRight(refused(limits, principal, retryAfterMs), Effect.fail(error))
        }
        if (tokenBucket === undefined) return Effect.succeed(unlimited)
        const tokensAt = buckets.length - 1
        return Effect.succeed({
          settle: (used: number) => {
            const usedTokens = wholeTokens(used, counted)
            const delta = settle(lease, tokensAt, usedTokens - counted, usedTokens)
            if (delta === 0) return Effect.void
            // Queued in the key's next count, not waited for: the call's answer does not depend on it, and
            // it goes with the key's next take in this process (LINGER_MS at most), counted before it.
            return counts.send(batchKey, { buckets, step: { _tag: "adjust", bucket: tokensAt, delta } })
          }
        })
      })
    }

    /** Counts the call running in `fiber` when called (a step of that fiber). */
    const admitIn = (fiber: Fiber.RuntimeFiber<unknown, unknown>, principal: Principal, tokens: number) => {
      if (principal.accountId === null) return Effect.succeed(unlimited)
      const cap = principal.concurrency ?? defaults.concurrency
      const permitted = cap === undefined ? Effect.void : atStore(permit(fiber, principal, principal.accountId, cap))
      return thenAtOnce(permitted, () => countCall(fiber, principal, tokens))
    }

    return RateLimiter.of({
      // Made in the given fiber's step, else when it runs; its parts chained without a step each when they answer at once.
      admit: (principal, tokens, fiber) => inFiberStep(fiber, (running) => admitIn(running, principal, tokens))
    })
  })
)
