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
 */
import { randomUUID } from "node:crypto"
import { Clock, Effect, Exit, type Scope } from "effect"
import type { RateLimitStore, StoreUnavailable } from "../../services/RateLimiter.ts"
import { acquirePlainRelease } from "../../plugins/support/plainRelease.ts"
import { makeSerialBatches } from "../storage/serialBatches.ts"

/** Permits one store step may carry; more wait for the next. */
const MAX_BATCH = 64

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

/** `hold(account, cap)`: whether the account had room for one more call; a permit granted is held until the scope closes. */
export const makePermits = (
  store: RateLimitStore["Type"],
  leaseMs: number,
  lingerMs: number
): Effect.Effect<
  { readonly hold: (accountId: string, cap: number) => Effect.Effect<boolean, StoreUnavailable, Scope.Scope> },
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

    const hold = (accountId: string, cap: number) =>
      acquirePlainRelease(
        Effect.suspend(() => {
          const permit = randomUUID()
          return Effect.map(steps.submit(accountId, { acquire: true, permit, cap }), (granted) => {
            if (!granted) return undefined
            const entry: Held = { key: accountId, permit }
            held.add(entry)
            return entry
          })
        }),
        (entry) =>
          entry === undefined ? Effect.void : Effect.suspend(() => {
            held.delete(entry)
            return steps.send(accountId, { acquire: false, permit: entry.permit, cap })
          })
      ).pipe(Effect.map((entry) => entry !== undefined))

    return { hold }
  })
