/** The failover loop on its own, with a recording double of the health service. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, TestClock } from "effect"
import { firstThatAnswers, type RetryPolicy } from "../layers/upstream/failover.ts"
import type { Target } from "../services/RoutePlanner.ts"
import type { Deployment, Model } from "../services/Catalogue.ts"
import type { Health, Outcome } from "../services/Health.ts"
import { UpstreamFailure } from "../services/Providers.ts"

const model = { id: "svc/m", tier: "third_party" } as Model
const target = (id: string): Target => ({ model, deployment: { id } as Deployment, outputTokens: 100 })

const policy: RetryPolicy = { maxAttempts: 4, backoffBaseMs: 100, backoffCapMs: 1000, maxRetryWaitMs: 2000 }

/** `askedWhenCalled`: its circuits answer when asked (as HealthPg's do), not when the answer's effect runs. */
const healthDouble = (closed: (id: string) => boolean = () => true, askedWhenCalled = false) => {
  const recorded: Array<Outcome> = []
  const asked: Array<string> = []
  const health = {
    record: (outcome: Outcome) => Effect.sync(() => void recorded.push(outcome)),
    view: () => { throw new Error("not used") },
    admits: (id: string) =>
      askedWhenCalled ? (asked.push(id), Effect.succeed(closed(id))) : Effect.sync(() => (asked.push(id), closed(id)))
  } as unknown as Health["Type"]
  return { asked, health, recorded }
}

const failure = (kind: UpstreamFailure["kind"], status?: number, retryAfterSeconds?: number) =>
  new UpstreamFailure({
    kind,
    detail: "scripted",
    ...(status !== undefined ? { status } : {}),
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {})
  })

/** Answers per deployment in turn: a failure, or "ok". */
const scripted = (script: Record<string, Array<UpstreamFailure | "ok">>) => {
  const calls: Array<string> = []
  const attempt = ({ deployment }: Target) =>
    Effect.suspend(() => {
      calls.push(deployment.id)
      const next = script[deployment.id]!.shift() ?? "ok"
      return next === "ok" ? Effect.succeed(deployment.id) : Effect.fail(next)
    })
  return { attempt, calls }
}

describe("failover", () => {
  it.effect("tries the next route at once, and retries after a backoff within the budget", () =>
    Effect.gen(function*() {
      const { health, recorded } = healthDouble()
      const { attempt, calls } = scripted({ a: [failure("status", 503), failure("connection")], b: [failure("timeout")] })
      const fiber = yield* Effect.fork(firstThatAnswers([target("a"), target("b")], policy, health, attempt, () => 1))
      yield* TestClock.adjust("1 second")
      const answered = yield* Fiber.join(fiber)
      expect(answered.value).toBe("b")
      expect(calls).toEqual(["a", "b", "a", "b"])
      expect(answered.attempts.map((a) => a.outcome)).toEqual(["error", "timeout", "error", "ok"])
      // Each deployment is blamed once per call, however often it was retried.
      expect(recorded.map((outcome) => outcome.deployment)).toEqual(["a", "b"])
    }))

  it.effect("on the clock it is given, makes its first try when called, and asks a retry's circuit only after the backoff", () =>
    Effect.gen(function*() {
      const { asked, health } = healthDouble(() => true, true)
      const { attempt, calls } = scripted({ a: [failure("status", 503)], b: [failure("connection")] })
      const clock = yield* Effect.clock
      const answering = firstThatAnswers([target("a"), target("b")], { ...policy, clock }, health, attempt, () => 1)
      // Asked as the call was made, not when its effect runs (a step saved on every call).
      expect(asked).toEqual(["a"])
      const fiber = yield* Effect.fork(answering)
      yield* TestClock.adjust(99)
      expect(asked).toEqual(["a", "b"])
      yield* TestClock.adjust(1)
      const answered = yield* Fiber.join(fiber)
      expect(answered.value).toBe("a")
      expect(asked).toEqual(["a", "b", "a"])
      expect(calls).toEqual(["a", "b", "a"])
    }))

  it.effect("stops at once on a refusal of the request itself, and blames nobody", () =>
    Effect.gen(function*() {
      const { health, recorded } = healthDouble()
      const { attempt, calls } = scripted({ a: [failure("status", 400)], b: [] })
      const exit = yield* Effect.exit(firstThatAnswers([target("a"), target("b")], policy, health, attempt))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(calls).toEqual(["a"])
      expect(recorded).toEqual([])
    }))

  it.effect("waits out a short Retry-After, leaves a long one out, and keeps to the attempt budget", () =>
    Effect.gen(function*() {
      const { health, recorded } = healthDouble()
      const { attempt, calls } = scripted({
        short: [failure("status", 429, 1), failure("status", 429, 1), failure("status", 429, 1), failure("status", 429, 1)],
        long: [failure("status", 429, 60)]
      })
      const fiber = yield* Effect.fork(Effect.exit(firstThatAnswers([target("short"), target("long")], policy, health, attempt, () => 1)))
      yield* TestClock.adjust("10 seconds")
      const exit = yield* Fiber.join(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
      expect(calls).toEqual(["short", "long", "short", "short"])
      expect(recorded.find((outcome) => outcome.deployment === "long")?.retryAfterSeconds).toBe(60)
    }))

  it.effect("skips routes whose circuit does not admit the call, without spending the budget, asking each circuit once a try", () =>
    Effect.gen(function*() {
      const { asked, health } = healthDouble((id) => id !== "open")
      const { attempt, calls } = scripted({ open: [], b: [] })
      const answered = yield* firstThatAnswers([target("open"), target("b")], policy, health, attempt)
      expect(calls).toEqual(["b"])
      expect(answered.attempts).toHaveLength(1)
      // A half-open circuit's admission claims its probe: asked twice, it would be claimed twice.
      expect(asked).toEqual(["open", "b"])
    }))

  it.effect("blames the deployment for a refused credential or config: fails over, no retry, its circuit cools down at once", () =>
    Effect.gen(function*() {
      const { health, recorded } = healthDouble()
      const { attempt, calls } = scripted({ a: [failure("status", 401)], b: [failure("status", 404)], c: [failure("status", 403)] })
      const exit = yield* Effect.exit(
        firstThatAnswers([target("a"), target("b"), target("c")], { ...policy, faultCooldownSeconds: 30 }, health, attempt)
      )
      expect(Exit.isFailure(exit)).toBe(true)
      // Each route once: trying the same credential again cannot help.
      expect(calls).toEqual(["a", "b", "c"])
      expect(recorded.map((outcome) => [outcome.deployment, outcome.status, outcome.retryAfterSeconds])).toEqual([
        ["a", 401, 30],
        ["b", 404, 30],
        ["c", 403, 30]
      ])
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail") expect(exit.cause.error.refused).toBeUndefined()
    }))

  it.effect("starts no attempt and no backoff past the call's deadline", () =>
    Effect.gen(function*() {
      const { health } = healthDouble()
      const { attempt, calls } = scripted({ a: [failure("status", 503), failure("status", 503)] })
      // The backoff before the second try (at least 50 ms) would end past the deadline.
      const exit = yield* Effect.exit(firstThatAnswers([target("a")], { ...policy, deadlineAt: 40 }, health, attempt, () => 0))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(calls).toEqual(["a"])
    }))
})
