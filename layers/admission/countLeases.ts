/**
 * Leases of a key's rate-limit tokens, held in this process. Far from its
 * limits, a key's count takes more than the call asks for (at most 32 calls'
 * worth, and at most a sixteenth of what each bucket was last seen holding);
 * the process's next calls of the key are admitted from that lease without a
 * store operation, and their token corrections settle against it. What a
 * lease has left goes back to the store once the key has been idle for
 * `idleSweeps` sweeps, and when the process stops. Nothing is admitted that
 * the store did not grant, so a key's limits are never exceeded; near them
 * no lease is taken and counting is exact, call by call (docs/architecture.md).
 */
import type { Bucket, Taken } from "../../services/RateLimiter.ts"
import { refilled } from "./tokenBucket.ts"

/** The most calls' worth one lease takes. */
const MAX_LEASE_CALLS = 32

/** A lease takes at most this share of what a bucket was last seen holding. */
const LEASE_SHARE = 16

export interface KeyLease {
  readonly buckets: ReadonlyArray<Bucket>
  /** Tokens taken from the store and not used yet, per bucket. */
  readonly left: Array<number>
  /** What each bucket held after this process's last take (undefined before the first), and when. */
  seen: ReadonlyArray<number> | undefined
  seenAtMs: number
  /** A take with a lease is in flight: other calls go without one, so a key takes one lease at a time. */
  refilling: boolean
  /** A take ahead of need is forked and has not started yet (RateLimiterLive.ts `refillAhead`). */
  refillQueued: boolean
  /** Holds tokens it took beyond calls' own (corrections then settle against it). */
  active: boolean
  /** A correction put the key in debt at the store: the next call must be counted there, after it. */
  owes: boolean
  /** A call's tokens as corrections found them lately, per bucket (0 for a bucket never corrected). */
  readonly spent: Array<number>
  /** Sweeps since it was last used. */
  unusedSweeps: number
}

/** Takes what it can of `need` from the lease (nothing while it owes); answers what it took, per bucket. */
export const claim = (lease: KeyLease, need: ReadonlyArray<number>) =>
  need.map((amount, i) => {
    if (lease.owes) return 0 // the next call is counted at the store, after the debt
    const taken = Math.min(amount, Math.max(0, lease.left[i]!))
    lease.left[i] = lease.left[i]! - taken
    return taken
  })

/** Whether the lease is left with fewer than `calls` calls' worth like `need` of some bucket. */
export const runsLow = (lease: KeyLease, need: ReadonlyArray<number>, calls: number) => {
  for (let i = 0; i < need.length; i++) if (need[i]! > 0 && lease.left[i]! < calls * need[i]!) return true
  return false
}

/** Gives back what `claim` took (the call was refused). */
export const unclaim = (lease: KeyLease, claimed: ReadonlyArray<number>) =>
  claimed.forEach((amount, i) => void (lease.left[i] = lease.left[i]! + amount))

/** A call's worth of each bucket for a lease: what this call asks, or what calls lately used if more. */
export const perCall = (lease: KeyLease, need: ReadonlyArray<number>) =>
  need.map((amount, i) => Math.max(amount, Math.ceil(lease.spent[i]!)))

/** How many calls' worth (`perCall`) a take may lease now: 0 near a limit, or while a lease is being taken. */
export const leaseCalls = (lease: KeyLease, worth: ReadonlyArray<number>) => {
  if (lease.seen === undefined || lease.refilling) return 0
  let calls = MAX_LEASE_CALLS
  worth.forEach((amount, i) => {
    if (amount > 0) calls = Math.min(calls, Math.floor(lease.seen![i]! / (LEASE_SHARE * amount)))
  })
  return Math.max(0, calls)
}

/**
 * A call's correction of bucket `i` (`delta` more used than counted, `used` in all). Against an active
 * lease a refund stays in it and an overrun comes out of it. Answers what the store must still count:
 * all of it without a lease; with one, the debt the lease could not cover (the lease then owes it, so
 * the key's next call is counted at the store, after it).
 */
export const settle = (lease: KeyLease, i: number, delta: number, used: number) => {
  lease.spent[i] = lease.spent[i]! * 0.8 + used * 0.2
  if (!lease.active) return delta
  const left = lease.left[i]! - delta
  lease.left[i] = Math.max(0, left)
  if (left >= 0) return 0
  lease.owes = true
  return -left
}

/** Records what the store answered a take of this process: what each bucket holds now; a debt owed is counted once one fits. */
export const seen = (lease: KeyLease, taken: Taken, nowMs: number) => {
  lease.seen = taken.available
  lease.seenAtMs = nowMs
  if (taken.ok) lease.owes = false
}

/** Whether the lease covers a call on its own: it holds a lease, owes nothing, and nothing is left to count. */
export const covers = (lease: KeyLease, rest: ReadonlyArray<number>) =>
  lease.active && !lease.owes && rest.every((amount) => amount === 0)

/** What the caller is told bucket `i` holds: the store's last answer, refilled since, and the lease's tokens. */
export const visible = (lease: KeyLease, i: number, nowMs: number) => {
  const bucket = lease.buckets[i]!
  const stored = lease.seen === undefined ? bucket.limit : refilled(bucket, lease.seen[i]!, lease.seenAtMs, nowMs)
  return Math.min(bucket.limit, stored + lease.left[i]!)
}

/** The leases of this process, per key and limits: a lease goes back after `idleSweeps` sweeps unused. */
export const makeCountLeases = (idleSweeps: number) => {
  const leases = new Map<string, KeyLease>()
  return {
    of: (key: string, buckets: ReadonlyArray<Bucket>): KeyLease => {
      let lease = leases.get(key)
      if (lease === undefined) {
        lease = { buckets, left: buckets.map(() => 0), seen: undefined, seenAtMs: 0, refilling: false, refillQueued: false, active: false,
          owes: false, spent: buckets.map(() => 0), unusedSweeps: 0 }
        leases.set(key, lease)
      }
      lease.unusedSweeps = 0
      return lease
    },
    /**
     * Ends the leases of keys not used for `idleSweeps` sweeps (all of them when `all`): answers, per
     * lease, the tokens it had left, to give back to the store. An ended lease with nothing left is forgotten.
     */
    sweep: (all: boolean) => {
      const ended: Array<{ readonly key: string; readonly buckets: ReadonlyArray<Bucket>; readonly left: ReadonlyArray<number> }> = []
      for (const [key, lease] of leases) {
        if (!all && lease.unusedSweeps++ < idleSweeps) continue
        lease.active = false
        if (lease.left.some((tokens) => tokens !== 0)) {
          ended.push({ key, buckets: lease.buckets, left: [...lease.left] })
          lease.left.fill(0)
        } else if (!lease.refilling) leases.delete(key)
      }
      return ended
    }
  }
}
