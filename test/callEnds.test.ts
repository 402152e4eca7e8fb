/**
 * A call's ends (services/callEnds.ts): put down at once in the call's own
 * scope and run after it closes, the last first, each whatever the others
 * did; anywhere else (a narrower scope, no call, a call already ended) an
 * end is a finalizer of the fiber's scope, as before.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Logger, Scope } from "effect"
import { atCallEnd, type CallEnd, type CallEnds, currentCallEnds, emptyCallEnds, inCallScope } from "../services/callEnds.ts"

/** A call's ends in a scope made for it beforehand, as the chat lane makes them. */
const callEnds = () => emptyCallEnds(Effect.runSync(Scope.make()))

/** `effect` as the chat lane runs a call: in its own scope, in its context, with its ends. */
const asCall = <A, E>(ends: CallEnds, effect: Effect.Effect<A, E, Scope.Scope>) =>
  inCallScope(ends)(effect).pipe(Effect.provideService(Scope.Scope, ends.scope), Effect.locally(currentCallEnds, ends))

/** Puts `end` down from the running fiber, answering whether that took no step (an Exit). */
const putDown = (end: CallEnd) =>
  Effect.withFiberRuntime<boolean, never, Scope.Scope>((fiber) => {
    const put = atCallEnd(fiber, end)
    return Effect.as(put, Exit.isExit(put))
  })

const loggedMessages = (into: Array<unknown>) =>
  Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void into.push(Array.isArray(message) ? message[0] : message)))

describe("a call's ends", () => {
  it.effect("in the call's own scope: put down at once, run after the scope closes, the last first, each whatever the others did", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const logged: Array<unknown> = []
      const ends = callEnds()
      const told: Array<Exit.Exit<unknown, unknown>> = []
      const atOnce = yield* asCall(
        ends,
        Effect.gen(function*() {
          const first = yield* putDown((exit) => Effect.sync(() => void (ran.push("permit"), told.push(exit))))
          const second = yield* putDown(() => Effect.zipRight(Effect.sync(() => void ran.push("settlement")), Effect.die("lost")))
          // A resource on the scope itself, taken after both: released first.
          yield* Scope.addFinalizer(yield* Effect.scope, Effect.sync(() => void ran.push("upstream body")))
          expect(ran).toEqual([])
          return [first, second]
        })
      ).pipe(Effect.provide(loggedMessages(logged)))
      expect(atOnce).toEqual([true, true])
      expect(ran).toEqual(["upstream body", "settlement", "permit"])
      expect(logged).toEqual(["a call's end failed"])
      expect(told.map(Exit.isSuccess)).toEqual([true])
      expect(ends.ends).toEqual([])
    }))

  it.effect("told how the call ended: failed, or interrupted (a caller that left)", () =>
    Effect.gen(function*() {
      const told: Array<string> = []
      const tell: CallEnd = (exit) => Effect.sync(() => void told.push(Exit.isInterrupted(exit) ? "interrupted" : Exit.isFailure(exit) ? "failed" : "served"))
      const failed = yield* Effect.exit(asCall(callEnds(), Effect.zipRight(putDown(tell), Effect.fail("upstream"))))
      expect(Exit.isFailure(failed)).toBe(true)
      const started = yield* Effect.makeLatch()
      const fiber = yield* Effect.fork(asCall(callEnds(), Effect.zipRight(putDown(tell), Effect.zipRight(started.open, Effect.never))))
      yield* started.await
      yield* Fiber.interrupt(fiber)
      expect(told).toEqual(["failed", "interrupted"])
    }))

  it.effect("in a narrower scope, without a call, or once the call's ends ran: a finalizer of the fiber's scope", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const ends = callEnds()
      const narrower = yield* asCall(
        ends,
        Effect.gen(function*() {
          const atOnce = yield* Effect.scoped(putDown(() => Effect.sync(() => void ran.push("narrower"))))
          // The narrower scope closed with its region: its end ran then, before the call's.
          expect(ran).toEqual(["narrower"])
          return atOnce
        })
      )
      expect(narrower).toBe(false)

      const scope = yield* Scope.make()
      const alone = yield* Scope.extend(putDown(() => Effect.sync(() => void ran.push("no call"))), scope)
      expect({ alone, ran }).toEqual({ alone: false, ran: ["narrower"] })
      yield* Scope.close(scope, Exit.void)
      expect(ran).toEqual(["narrower", "no call"])

      // A fiber of the call still running once it ended (forked into the call's scope): its end runs at once.
      const ended = callEnds()
      const latch = yield* Effect.makeLatch()
      const late = yield* asCall(ended, Effect.forkDaemon(Effect.zipRight(latch.await, putDown(() => Effect.sync(() => void ran.push("late"))))))
      expect(ended.closed).toBeDefined()
      yield* latch.open
      expect(yield* Fiber.join(late)).toBe(false)
      expect(ran).toEqual(["narrower", "no call", "late"])
    }))
})
