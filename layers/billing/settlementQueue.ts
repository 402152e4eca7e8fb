/**
 * The settlements this process queued and the ledger has not answered yet.
 * A settlement is queued so that a call is answered before its receipt is
 * written (the write goes with the account's next reservation, or alone
 * within 50 ms); what runs after the write (the call's transcript, the
 * journal when the write failed) runs in a fiber of its own then, if any. `settled`
 * lets a read wait for every settlement queued before it, so a caller
 * reading its receipts, balance or usage through this process sees every
 * call it was answered.
 */
import { Effect, type Exit, Runtime } from "effect"
import type { Receipt } from "../../services/Ledger.ts"

export const makeSettlementQueue = (runtime: Runtime.Runtime<never>) => {
  /** Each queued settlement's number, until its answer has been handled. */
  const open = new Set<number>()
  let last = 0
  /** Reads waiting for every settlement numbered up to theirs. */
  let waiting: Array<{ readonly upTo: number; readonly resume: () => void }> = []

  const done = (n: number) => {
    open.delete(n)
    if (waiting.length === 0) return
    let oldest = Infinity
    for (const m of open) if (m < oldest) oldest = m
    const still: typeof waiting = []
    for (const waiter of waiting) {
      if (waiter.upTo < oldest) waiter.resume()
      else still.push(waiter)
    }
    waiting = still
  }

  return {
    /**
     * The ledger's callback for one queued settlement: runs what `after` answers for it, in a fiber
     * of `runtime`, and counts it done then; at once when `after` answers nothing to run (the common
     * case: no fiber for it).
     */
    track: (after: (answer: Exit.Exit<Receipt>) => Effect.Effect<void> | undefined) => {
      const n = ++last
      open.add(n)
      return (answer: Exit.Exit<Receipt>) => {
        const next = after(answer)
        if (next === undefined) return done(n)
        Runtime.runFork(runtime)(Effect.ensuring(
          Effect.catchAllCause(next, (cause) => Effect.logError("after a queued settlement", cause)),
          Effect.sync(() => done(n))
        ))
      }
    },
    /** Waits for the settlements queued so far, or `maxMillis` (a database that does not answer must not hold reads). */
    settledWithin: (maxMillis: number) =>
      Effect.suspend(() => {
        if (open.size === 0) return Effect.void
        const upTo = last
        return Effect.async<void>((resume) => {
          const leave = () => void (waiting = waiting.filter((other) => other !== waiter))
          const timer = setTimeout(() => (leave(), resume(Effect.void)), maxMillis)
          const waiter = { upTo, resume: () => (clearTimeout(timer), resume(Effect.void)) }
          waiting.push(waiter)
          return Effect.sync(() => (clearTimeout(timer), leave()))
        })
      })
  }
}
