/**
 * What a chat call's answer does not wait for (layers/gateway/afterAnswer.ts):
 * put aside while the call ends, run once the caller's scope closes, in the
 * order it was put, each work whatever the others did.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Logger, Scope } from "effect"
import { endingBeforeLater } from "../layers/gateway/afterAnswer.ts"

describe("work after the answer", () => {
  it.effect("runs once the caller's scope closes, in the order it was put, each work whatever the ones before did", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const logged: Array<unknown> = []
      const work = (name: string) => Effect.sync(() => void ran.push(name))
      const scope = yield* Scope.make()
      const answer = yield* endingBeforeLater((later) =>
        Effect.gen(function*() {
          yield* later(() => work("health"))
          yield* later(() => Effect.zipRight(work("settlement"), Effect.die("lost")))
          ran.push("answered")
          yield* later(() => work("rate limits"))
          return 42
        })
      ).pipe(Scope.extend(scope))
      expect(answer).toBe(42)
      expect(ran).toEqual(["answered"])
      yield* Scope.close(scope, Exit.void).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logged.push(Array.isArray(message) ? message[0] : message))))
      )
      expect(ran).toEqual(["answered", "health", "settlement", "rate limits"])
      expect(logged).toEqual(["work after a call's answer failed"])
    }))

  it.effect("runs what was put before the call's end failed", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const scope = yield* Scope.make()
      const ended = yield* Effect.exit(
        endingBeforeLater((later) => Effect.zipRight(later(() => Effect.sync(() => void ran.push("health"))), Effect.fail("settlement")))
          .pipe(Scope.extend(scope))
      )
      expect(ended).toStrictEqual(Exit.fail("settlement"))
      expect(ran).toEqual([])
      yield* Scope.close(scope, Exit.void)
      expect(ran).toEqual(["health"])
    }))
})
