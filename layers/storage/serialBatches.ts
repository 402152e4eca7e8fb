/**
 * Group commit for a hot key. At most one batch per key is in flight in this
 * process; what arrives meanwhile waits and goes together as the next batch.
 * An idle key runs at once, in the caller's own fiber, so a quiet account
 * pays no added latency, and a busy one sends fewer, larger statements
 * instead of queueing on its row lock.
 *
 * A waiting call is resumed by a callback (`Effect.async`), not a
 * `Deferred`: making a Deferred spreads Effect's whole prototype into a new
 * object, ~30 µs a waiting call under load here (docs/performance.md).
 */
import { Cause, Effect, Exit, FiberSet, type Scope } from "effect"

export interface SerialBatches<I, O, E> {
  readonly submit: (key: string, item: I) => Effect.Effect<O, E>
  /**
   * Queues `item` without waiting for its answer: it goes in the key's next batch, so an item
   * submitted after it goes after it. To an idle key it lingers (`sendLingerMs`) for the key's next
   * submitted item, to go in one batch with it, before it goes alone in a fiber of its own. Queued
   * when called, behind a batch or a linger (an Exit: services/atOnce.ts): call it where it is to run.
   */
  readonly send: (key: string, item: I, onAnswer?: (answer: Exit.Exit<O, E>) => void) => Effect.Effect<void>
}

interface Waiting<I, O, E> {
  readonly item: I
  /** Resumes the waiting call with its item's answer (for a sent item, its `onAnswer`, if any). */
  readonly resume: (answer: Exit.Exit<O, E>) => void
  /** Sent, not submitted: nobody waits for it, so it may linger. */
  readonly sent: boolean
}

/**
 * `run` answers each item of a batch, in order; if it fails as a whole, every item gets that
 * failure (its error, or its defect). Items sent and still lingering when the scope closes go then.
 */
export const makeSerialBatches = <I, O, E>(
  run: (key: string, items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<O, E>>, E>,
  maxBatch: number,
  sendLingerMs = 0
): Effect.Effect<SerialBatches<I, O, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const fibers = yield* FiberSet.make()
    // A key is present while a batch of it is in flight; its array holds the next batch.
    const queued = new Map<string, Array<Waiting<I, O, E>>>()
    // Items sent to an idle key, waiting for its next submitted item or the end of their linger.
    const lingering = new Map<string, Array<Waiting<I, O, E>>>()
    /** Set when the scope closes: what was sent goes now, lingering no more. */
    let closing = false

    /**
     * Item `i`'s answer from its batch's exit: a batch that failed as a whole fails every item with
     * its error, or, for a defect, dies with it.
     */
    const itemExit = (exit: Exit.Exit<ReadonlyArray<Exit.Exit<O, E>>, E>, i: number): Exit.Exit<O, E> => {
      if (Exit.isSuccess(exit)) return exit.value[i] ?? Exit.die(new Error("a batch answered fewer items than it was given"))
      const failure = Cause.failureOption(exit.cause)
      return failure._tag === "Some" ? Exit.fail(failure.value) : Exit.die(Cause.squash(exit.cause))
    }

    const answer = (batch: ReadonlyArray<Waiting<I, O, E>>, exit: Exit.Exit<ReadonlyArray<Exit.Exit<O, E>>, E>) =>
      Effect.sync(() => batch.forEach(({ resume }, i) => resume(itemExit(exit, i))))

    const unanswered = () => {}

    /**
     * Sent items wait for the key's next submitted one, or the end of their linger. The wait ends
     * only these items' linger: if they went meanwhile (with a submitted item) and others linger
     * now, those wait for their own end, or every batch would go as soon as any earlier wait ended.
     */
    const linger = (key: string, items: Array<Waiting<I, O, E>>): Effect.Effect<void> =>
      Effect.suspend(() => {
        lingering.set(key, items)
        const stillLingering = Effect.suspend(() => (lingering.get(key) === items ? release(key) : Effect.void))
        // Sent from a finalizer, the fiber would inherit its uninterruptible region: only the wait may be cut.
        const waited = Effect.zipRight(Effect.interruptible(Effect.sleep(sendLingerMs)), stillLingering)
        return Effect.asVoid(FiberSet.run(fibers, Effect.uninterruptible(waited)))
      })

    /** The next batch of a key whose batch just ended; none when only sent items are queued (they linger). */
    const nextBatch = (key: string): Effect.Effect<Array<Waiting<I, O, E>>> =>
      Effect.suspend(() => {
        const waiting = queued.get(key)!
        if (sendLingerMs === 0 || closing || waiting.some(({ sent }) => !sent)) {
          return Effect.succeed(waiting.splice(0, maxBatch))
        }
        queued.delete(key)
        return waiting.length === 0 ? Effect.succeed(waiting) : Effect.as(linger(key, waiting), [])
      })

    const drain = (key: string, first: Array<Waiting<I, O, E>>): Effect.Effect<void> =>
      Effect.gen(function*() {
        let batch = first
        while (batch.length > 0) {
          const exit = yield* Effect.exit(run(key, batch.map((waiting) => waiting.item)))
          yield* answer(batch, exit)
          batch = yield* nextBatch(key)
        }
        queued.delete(key)
      })

    /**
     * Runs a batch of `item` (after whatever lingered for the key) in the caller's fiber; whatever
     * queued meanwhile is drained in a fiber of its own.
     */
    const runAlone = (key: string, item: I) =>
      Effect.gen(function*() {
        const before = lingering.get(key) ?? []
        lingering.delete(key)
        queued.set(key, [])
        const exit = yield* Effect.exit(run(key, [...before.map((waiting) => waiting.item), item]))
        yield* answer(before, exit)
        const next = yield* nextBatch(key)
        if (next.length > 0) yield* FiberSet.run(fibers, drain(key, next))
        else queued.delete(key)
        return yield* itemExit(exit, before.length)
      })

    /** The items lingering for `key`, now: queued behind its batch in flight, else a batch of their own (in this fiber). */
    const release = (key: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        const items = lingering.get(key)
        if (items === undefined) return Effect.void
        lingering.delete(key)
        const waiting = queued.get(key)
        if (waiting !== undefined) return Effect.sync(() => void waiting.push(...items))
        queued.set(key, [])
        return drain(key, items)
      })
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closing = true
        return Effect.forEach(Array.from(lingering.keys()), release, { discard: true })
      })
    )

    return {
      send: (key, item, onAnswer = unanswered) => {
        const sent = { item, resume: onAnswer, sent: true }
        const waiting = queued.get(key) ?? lingering.get(key)
        if (waiting === undefined) return linger(key, [sent])
        waiting.push(sent)
        return Effect.void
      },
      submit: (key, item) =>
        Effect.suspend(() => {
          const waiting = queued.get(key)
          // An idle key: no fiber and no handoff, the common case of a quiet account.
          if (waiting === undefined) return Effect.uninterruptible(runAlone(key, item))
          // An `Exit` is itself the effect the call resumes with. Interrupted while waiting, the
          // call leaves its item in the batch: it runs, and its answer goes nowhere.
          return Effect.async<O, E>((resume) => void waiting.push({ item, resume, sent: false }))
        })
    }
  })
