/**
 * The Health breaker's contract (services/Health.ts) as one suite that
 * HealthPg (on a real database, real time) and HealthMemory (TestClock) must
 * both pass (test/healthContract.test.ts). Each test uses deployments of its own.
 */
import { expect } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { HealthMemory } from "../../layers/health/HealthMemory.ts"
import { HealthPg } from "../../layers/health/HealthPg.ts"
import { Health, type Outcome } from "../../services/Health.ts"
import { freshStorage } from "./moneyLayers.ts"
import { testConfig } from "./testConfig.ts"
import { layer } from "./layer.ts"

const COOLDOWN_MS = 1000
const configFile = {
  routing: { health: { failureThreshold: 2, cooldownSeconds: 1, maxCooldownSeconds: 2, syncMillis: 100, statsFlushMillis: 200 } }
}

export interface HealthLayers {
  readonly name: string
  readonly layer: Layer.Layer<Health>
  /** The database decides time for HealthPg: its suite runs on the live clock. */
  readonly liveClock: boolean
  readonly passCooldown: Effect.Effect<void>
}

export const pgHealth: HealthLayers = {
  name: "PostgreSQL",
  layer: HealthPg.pipe(Layer.provide(freshStorage(configFile)), Layer.orDie),
  liveClock: true,
  passCooldown: Effect.promise(() => new Promise<void>((wake) => setTimeout(wake, COOLDOWN_MS + 200)))
}

export const memoryHealth: HealthLayers = {
  name: "memory",
  layer: HealthMemory.pipe(Layer.provide(testConfig(configFile))),
  liveClock: false,
  passCooldown: TestClock.adjust(`${COOLDOWN_MS + 200} millis`)
}

const outcome = (deployment: string, ok: boolean, extra: Partial<Outcome> = {}): Outcome => ({
  deployment,
  model: "svc/swift",
  ok,
  ...(ok ? {} : { failure: "status" as const, status: 503 }),
  latencyMs: 40,
  attempt: 1,
  ...extra
})

export const healthContract = (implementation: HealthLayers) =>
  layer(implementation.layer, { timeout: "60 seconds", excludeTestServices: implementation.liveClock })(
    `Health contract: ${implementation.name}`,
    (it) => {
      it.effect("closed below the threshold; open at it, refusing calls", () =>
        Effect.gen(function*() {
          const health = yield* Health
          yield* health.record(outcome("c1", true))
          yield* health.record(outcome("c1", false))
          expect(health.view("c1")).toMatchObject({ state: "closed", consecutiveFailures: 1, requests: 2, failures: 1 })
          expect(yield* health.admits("c1")).toBe(true)
          yield* health.record(outcome("c1", false))
          expect(health.view("c1")).toMatchObject({ state: "open", consecutiveFailures: 2 })
          expect(health.view("c1").retryAt).toBeInstanceOf(Date)
          expect(yield* health.admits("c1")).toBe(false)
        }))

      it.effect("after the cooldown one caller probes; its success closes the breaker", () =>
        Effect.gen(function*() {
          const health = yield* Health
          yield* health.record(outcome("c2", false))
          yield* health.record(outcome("c2", false))
          yield* implementation.passCooldown
          expect(health.view("c2").state).toBe("half_open")
          expect(yield* Effect.all([health.admits("c2"), health.admits("c2"), health.admits("c2")])).toEqual([true, false, false])
          yield* health.record(outcome("c2", true))
          expect(health.view("c2")).toMatchObject({ state: "closed", consecutiveFailures: 0 })
          expect(yield* health.admits("c2")).toBe(true)
        }))

      it.effect("a failed probe opens it again; a Retry-After opens at once", () =>
        Effect.gen(function*() {
          const health = yield* Health
          yield* health.record(outcome("c3", false))
          yield* health.record(outcome("c3", false))
          yield* implementation.passCooldown
          expect(yield* health.admits("c3")).toBe(true)
          yield* health.record(outcome("c3", false))
          expect(health.view("c3").state).toBe("open")
          yield* health.record(outcome("c4", false, { status: 429, retryAfterSeconds: 1 }))
          expect(health.view("c4")).toMatchObject({ state: "open", consecutiveFailures: 1 })
        }))
    }
  )
