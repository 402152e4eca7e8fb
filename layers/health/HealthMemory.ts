/**
 * Deployment health in one process's memory, for unit tests: the rolling
 * window of HealthPg (layers/health/healthWindow.ts) and a breaker that
 * follows the same rules as its SQL (config `routing.health`): open after
 * `failureThreshold` consecutive failures or at once on a `Retry-After`
 * (never shortening a cooldown); half-open when the cooldown ends, where one
 * caller at a time wins the probe (for `PROBE_LEASE_SECONDS`); a failure then
 * reopens for twice the last cooldown, up to the maximum; a success closes it.
 * Time is the `Clock` the layer was built with (read synchronously, as `view`
 * is not an effect), so a TestClock drives cooldowns: build the layer under
 * the test's clock.
 *
 * Not modelled: other processes (no shared table, no sync, no stats flush, so
 * nothing for HealthReport), and the database clock.
 */
import { Effect, Layer } from "effect"
import { AppConfig } from "../../services/Config.ts"
import { type DeploymentHealth, Health, type Outcome } from "../../services/Health.ts"
import { type BreakerRow, stateAt, viewOf } from "./breakerRows.ts"
import { PROBE_LEASE_SECONDS } from "./HealthPg.ts"
import { makeWindow, type RollingWindow } from "./healthWindow.ts"

type Breaker = { -readonly [K in keyof BreakerRow]: BreakerRow[K] } & { cooldownSeconds: number }

export const HealthMemory: Layer.Layer<Health, never, AppConfig> = Layer.effect(
  Health,
  Effect.gen(function*() {
    const settings = (yield* AppConfig).file.routing.health
    const threshold = settings.failureThreshold
    const baseCooldown = settings.cooldownSeconds
    const maxCooldown = Math.max(settings.maxCooldownSeconds, baseCooldown)
    const clock = yield* Effect.clock
    const now = () => clock.unsafeCurrentTimeMillis()

    const breakers = new Map<string, Breaker>()
    const windows = new Map<string, RollingWindow>()
    const breakerOf = (deployment: string): Breaker => {
      let breaker = breakers.get(deployment)
      if (breaker === undefined) {
        breaker = { deployment, consecutiveFailures: 0, stored: "closed", retryAt: null, probeUntil: null, version: 1, cooldownSeconds: 0 }
        breakers.set(deployment, breaker)
      }
      return breaker
    }
    const windowOf = (deployment: string) => {
      let window = windows.get(deployment)
      if (window === undefined) windows.set(deployment, window = makeWindow())
      return window
    }
    const cooledDown = (breaker: Breaker, at: number) => breaker.retryAt !== null && breaker.retryAt <= at

    /** HealthPg's `failed` statement, on one breaker. */
    const fail = (breaker: Breaker, retryAfter: number | undefined, at: number) => {
      const failures = breaker.consecutiveFailures + 1
      const wait = (retryAfter ?? 0) * 1000
      if (breaker.stored !== "closed" && cooledDown(breaker, at)) {
        breaker.cooldownSeconds = Math.min(Math.max(breaker.cooldownSeconds * 2, baseCooldown), maxCooldown)
        breaker.retryAt = at + Math.max(breaker.cooldownSeconds * 1000, wait)
      } else if (breaker.stored !== "closed") {
        breaker.retryAt = Math.max(breaker.retryAt ?? 0, at + wait)
      } else if (failures >= threshold) {
        breaker.cooldownSeconds = baseCooldown
        breaker.retryAt = at + Math.max(baseCooldown * 1000, wait)
      } else {
        breaker.retryAt = retryAfter !== undefined ? at + wait : null
      }
      if (breaker.stored !== "closed" || failures >= threshold || retryAfter !== undefined) breaker.stored = "open"
      breaker.consecutiveFailures = failures
      breaker.probeUntil = null
    }

    const record = (outcome: Outcome) =>
      Effect.sync(() => {
        const at = now()
        windowOf(outcome.deployment).add(outcome, at)
        const breaker = breakerOf(outcome.deployment)
        if (!outcome.ok) return fail(breaker, outcome.retryAfterSeconds, at)
        // An answer to a call sent before the breaker opened does not cut its cooldown short.
        if (stateAt(breaker, at) === "open") return
        const cooled = breaker.stored !== "closed" && cooledDown(breaker, at)
        if ((breaker.stored === "closed" && breaker.consecutiveFailures > 0) || cooled) {
          Object.assign(breaker, { consecutiveFailures: 0, stored: "closed", retryAt: null, probeUntil: null, cooldownSeconds: 0 })
        }
      })

    const view = (deployment: string): DeploymentHealth => {
      const at = now()
      return viewOf(deployment, breakers.get(deployment), windowOf(deployment).stats(at), at)
    }

    const admits = (deployment: string) =>
      Effect.sync(() => {
        const at = now()
        const breaker = breakers.get(deployment)
        const state = stateAt(breaker, at)
        if (state !== "half_open") return state === "closed"
        if (breaker!.probeUntil !== null && breaker!.probeUntil > at) return false
        breaker!.stored = "half_open"
        breaker!.probeUntil = at + PROBE_LEASE_SECONDS * 1000
        return true
      })

    return Health.of({ record, view, admits })
  })
)
