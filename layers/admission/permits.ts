/**
 * An account's cap on concurrent calls, over a `RateLimitStore`: a call
 * holds a permit from admission until its scope closes. Per account and
 * process one store step is in flight; the permits given back and asked for
 * meanwhile go together in the next (group commit), given back first, so a
 * busy account costs one store operation per batch instead of two per call.
 * A permit given back is queued, not waited for: it goes with the account's
 * next request in this process (`lingerMs` at most), counted before it. One heartbeat per process renews the
 * leases of every permit it holds, in one operation, every third of the
 * lease; a process that dies leaves permits that expire.
 *
 * A permit given back may instead be kept for the account's next call in
 * this process, which then needs no store operation: a process keeps up to a
 * sixteenth of an account's cap (none under a cap of 16, so small caps are
 * exact), held and renewed as in use, and gives back those of an account
 * idle for `idleSweeps` sweeps, and all of them when it stops.
 */
import { randomUUID } from "node:crypto"
import { Clock, Effect, Exit, type Fiber, type Scope } from "effect"
import { mapAtOnce } from "../../services/atOnce.ts"
import { atCallEnd, type CallEnds, openCallEnds } from "../../services/callEnds.ts"
import type { RateLimitStore, StoreUnavailable } from "../../services/RateLimiter.ts"
import { acquirePlainRelease } from "../../plugins/support/plainRelease.ts"
import { makeSerialBatches } from "../storage/serialBatches.ts"

/** Permits one store step may carry; more wait for the next. */
const MAX_BATCH = 64

/** A process keeps at most this share of an account's cap as idle permits. */
const SPARE_SHARE = 16

/** A step of an account's permits: one asked for, or one given back. */
interface PermitItem {
  readonly acquire: boolean
  readonly permit: string
  readonly cap: number
}

/** A permit this process holds (renewed by its heartbeat). */
interface Held {
  readonly key: string
  readonly permit: string
}

/** An account's permits this process keeps idle for its next calls. */
interface Spares {
  readonly permits: Array<Held>
  /** The cap they were kept under: a call under another cap (the setting changed) gives them back. */
  readonly cap: number
  /** Sweeps since they were last used. */
  unusedSweeps: number
}

/**
 * `hold(fiber, account, cap)`: whether the account had room for one more call; a permit granted is held
 * until the fiber's scope closes. Idle permits go back once unused for `idleSweeps` sweeps (every `sweepMs`).
 */
export const makePermits = (
  store: RateLimitStore["Type"],
  leaseMs: number,
  lingerMs: number,
  sweepMs: number,
  idleSweeps: number
): Effect.Effect<
  {
    readonly hold: (
      fiber: Fiber.RuntimeFiber<unknown, unknown>,
      accountId: string,
      cap: number
    ) => Effect.Effect<boolean, StoreUnavailable, Scope.Scope>
  },
  never,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const steps = yield* makeSerialBatches(
      (accountId: string, items: ReadonlyArray<PermitItem>) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const release = items.flatMap((item) => item.acquire ? [] : [item.permit])
          const acquire = items.flatMap((item) => item.acquire ? [item.permit] : [])
          // The latest cap asked with: an account's cap is one setting, changed at most between requests.
          let cap = 0
          for (const item of items) if (item.acquire) cap = item.cap
          const granted = yield* store.permits(accountId, cap, { release, acquire }, now, now + leaseMs)
          let next = 0
          return items.map((item) => Exit.succeed(item.acquire ? granted[next++] === true : true))
        }),
      MAX_BATCH,
      lingerMs
    )

    const held = new Set<Held>()
    const beat = Effect.suspend(() =>
      held.size === 0
        ? Effect.void
        : Effect.flatMap(Clock.currentTimeMillis, (now) => store.renew(Array.from(held), now + leaseMs))
    )
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(leaseMs / 3), Effect.ignoreLogged(beat))))

    const spares = new Map<string, Spares>()
    const giveBack = (accountId: string, entry: Held, cap: number) => {
      held.delete(entry)
      return steps.send(accountId, { acquire: false, permit: entry.permit, cap })
    }
    /** Gives back every idle permit of the account. */
    const dropSpares = (accountId: string, pool: Spares) => {
      spares.delete(accountId)
      return Effect.forEach(pool.permits, (entry) => giveBack(accountId, entry, pool.cap), { discard: true })
    }
    /** Gives back the idle permits of accounts not used for `idleSweeps` sweeps (every idle one when `all`). */
    const sweep = (all: boolean) =>
      Effect.suspend(() => {
        const back: Array<Effect.Effect<void>> = []
        for (const [accountId, pool] of spares) {
          if (!all && pool.unusedSweeps++ < idleSweeps) continue
          back.push(dropSpares(accountId, pool))
        }
        return Effect.all(back, { discard: true })
      })
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(sweepMs), sweep(false))))
    yield* Effect.addFinalizer(() => sweep(true))

    /** A permit's end, when called (a call's end: services/callEnds.ts): kept as a spare for the account's next call, or given back. */
    const ended = (accountId: string, cap: number, entry: Held | undefined) => {
      if (entry === undefined) return Effect.void
      const kept = Math.floor(cap / SPARE_SHARE)
      const pool = spares.get(accountId)
      if (kept === 0 || (pool !== undefined && (pool.cap !== cap || pool.permits.length >= kept))) {
        return giveBack(accountId, entry, cap)
      }
      if (pool === undefined) spares.set(accountId, { permits: [entry], cap, unusedSweeps: 0 })
      else {
        pool.permits.push(entry)
        pool.unusedSweeps = 0
      }
      return Effect.void
    }

    /** A permit asked of the store (after giving back spares kept under another cap). */
    const asked = (accountId: string, cap: number, pool: Spares | undefined) =>
      acquirePlainRelease(
        Effect.suspend(() => {
          const permit = randomUUID()
          const granted = Effect.map(steps.submit(accountId, { acquire: true, permit, cap }), (granted) => {
            if (!granted) return undefined
            const entry: Held = { key: accountId, permit }
            held.add(entry)
            return entry
          })
          return pool === undefined || pool.cap === cap ? granted : Effect.zipRight(dropSpares(accountId, pool), granted)
        }),
        (entry) => ended(accountId, cap, entry)
      ).pipe(Effect.map((entry) => entry !== undefined))

    /** A spare, when the account has one, taken and its end put down in the same step; else a permit asked of the store. */
    const holdNow = (
      fiber: Fiber.RuntimeFiber<unknown, unknown>,
      accountId: string,
      cap: number,
      call: CallEnds | undefined
    ): Effect.Effect<boolean, StoreUnavailable, Scope.Scope> => {
      const pool = spares.get(accountId)
      const spare = pool?.cap === cap ? pool.permits.pop() : undefined
      if (spare === undefined) return asked(accountId, cap, pool)
      pool!.unusedSweeps = 0
      return mapAtOnce(atCallEnd(fiber, () => ended(accountId, cap, spare), call), () => true)
    }

    /**
     * In a call's own scope the spare's end is one of the call's ends, put down at once (an Exit) with
     * no step between the spare taken and its end: every call of a busy account under a large cap
     * comes here. Elsewhere it goes on the scope, in one uninterruptible step with the spare taken.
     */
    const hold = (
      fiber: Fiber.RuntimeFiber<unknown, unknown>,
      accountId: string,
      cap: number
    ): Effect.Effect<boolean, StoreUnavailable, Scope.Scope> => {
      const call = openCallEnds(fiber)
      return call !== undefined
        ? holdNow(fiber, accountId, cap, call)
        : Effect.uninterruptible(
          Effect.withFiberRuntime<boolean, StoreUnavailable, Scope.Scope>((inRegion) => holdNow(inRegion, accountId, cap, undefined))
        )
    }

    return { hold }
  })
