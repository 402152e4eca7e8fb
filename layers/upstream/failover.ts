/**
 * Trying routes until one answers. Targets (a model and one of its
 * deployments) are tried in order; a failure that is the route's fault
 * (connection error, timeout, 408/409/425/429, 5xx, a malformed answer, and
 * 401/403/404: our credential or config, which opens its circuit at once)
 * moves on to the next, and once all were tried the ones worth retrying are tried
 * again after a jittered exponential backoff, honouring `Retry-After` when it
 * is short enough to wait for, until the attempt budget is spent. A refusal
 * caused by the request itself (another 4xx) ends the call at once: another
 * route would refuse it too. Deployments whose circuit is open are skipped
 * without spending the budget, and a call counts against a deployment's
 * health once, however often it retried it (so one call's retries cannot open
 * a circuit by themselves).
 */
import { Cause, type Clock, Duration, Effect, Either, Exit, Option } from "effect"
import type { RetrySettings } from "../../services/Config.ts"
import type { Health } from "../../services/Health.ts"
import type { AdapterFailure, RequestNotTranslatable, UpstreamFailure } from "../../services/Providers.ts"
import type { Target } from "../../services/RoutePlanner.ts"
import type { Answered, AttemptLog, RoutesFailed } from "../../services/Upstream.ts"
import { thenAtOnce } from "../../services/atOnce.ts"

export type RetryPolicy = RetrySettings & {
  /** How long a deployment that refused our credential or config (`isDeploymentFault`) stays out; none: counted as a failure. */
  readonly faultCooldownSeconds?: number
  /** When the call must be over (epoch ms, `Clock`): no attempt or backoff starts after it. */
  readonly deadlineAt?: number
  /**
   * The clock to read, the caller's fiber's (layers/telemetry/stageSpan.ts `clockOf`): the first
   * try is then made when `firstThatAnswers` is called, with no step. None: read when it runs.
   */
  readonly clock?: Clock.Clock
}

/** The attempt log's word for a route whose plugin could not express the request. */
export const NOT_TRANSLATABLE = "not translatable"

/**
 * The upstream refused our credential (401, 403) or does not know the model or path we were
 * configured with (404): the deployment's fault, never the caller's.
 */
export const isDeploymentFault = (failure: UpstreamFailure) =>
  failure.kind === "status" && (failure.status === 401 || failure.status === 403 || failure.status === 404)

/** A refusal that another route would repeat: the request's own fault. */
export const isRequestFault = (failure: UpstreamFailure) =>
  failure.kind === "status" && failure.status !== undefined && failure.status >= 400 && failure.status < 500 &&
  ![408, 409, 425, 429].includes(failure.status) && !isDeploymentFault(failure)

export const describeFailure = (failure: UpstreamFailure) =>
  failure.kind === "status" ? `status ${failure.status}` : failure.kind

const backoffMs = (policy: RetryPolicy, pass: number, random: () => number) => {
  const ceiling = Math.min(policy.backoffCapMs, policy.backoffBaseMs * 2 ** (pass - 1))
  return ceiling / 2 + random() * (ceiling / 2)
}

type Attempt<A, R> = (target: Target, attemptNumber: number) => Effect.Effect<A, AdapterFailure, R>

/** What became of one try of a route: the call's deadline came first, its circuit refused it, or it was tried. */
type Try<A> =
  | { readonly _tag: "PastDeadline" }
  | { readonly _tag: "NotAdmitted" }
  | {
    readonly _tag: "Tried"
    readonly result: Either.Either<A, AdapterFailure>
    readonly startedAt: number
    readonly endedAt: number
  }

const PAST_DEADLINE = { _tag: "PastDeadline" } as const
const NOT_ADMITTED = { _tag: "NotAdmitted" } as const

/**
 * One try of `target` after waiting `waitMs`: none when the wait would outlast the call's deadline
 * (a backoff past it is not waited for) or its circuit does not admit the call. Chained, not a
 * generator, answering at once where the clock and the health do: every call's first try is one.
 */
const tryRoute = <A, R>(
  policy: RetryPolicy,
  target: Target,
  attemptNumber: number,
  waitMs: number,
  health: Health["Type"],
  attempt: Attempt<A, R>
): Effect.Effect<Try<A>, never, R> => {
  const at = (clock: Clock.Clock): Effect.Effect<Try<A>, never, R> => {
    if (clock.unsafeCurrentTimeMillis() + waitMs >= (policy.deadlineAt ?? Infinity)) return Effect.succeed(PAST_DEADLINE)
    const admits = waitMs > 0
      ? Effect.zipRight(Effect.sleep(Duration.millis(waitMs)), Effect.suspend(() => health.admits(target.deployment.id)))
      : health.admits(target.deployment.id)
    return thenAtOnce(admits, (admitted) => {
      if (!admitted) return Effect.succeed(NOT_ADMITTED)
      const startedAt = performance.now()
      // One step for the attempt's answer or its error (`Effect.either` and a `map` took two).
      return Effect.matchCauseEffect(attempt(target, attemptNumber), {
        // As `Effect.either`: a defect is passed on, a failure is the try's result.
        onFailure: (cause): Effect.Effect<Try<A>> => {
          const failure = Cause.isDie(cause) ? Option.none() : Cause.failureOption(cause)
          return Option.isSome(failure)
            ? Exit.succeed({ _tag: "Tried", result: Either.left(failure.value), startedAt, endedAt: performance.now() })
            // With no failure in it, or a defect beside it (a try's one fiber fails one way): none to pass on.
            : Exit.failCause(cause as Cause.Cause<never>)
        },
        onSuccess: (value): Effect.Effect<Try<A>> =>
          Exit.succeed({ _tag: "Tried", result: Either.right(value), startedAt, endedAt: performance.now() })
      })
    })
  }
  // On the policy's clock the try is made when called; else on the fiber's, read when it runs.
  return policy.clock !== undefined ? at(policy.clock) : Effect.clockWith(at)
}

/**
 * The first route that answers. Its first try is made before the loop's generator: most calls end
 * there. Whatever it met, the loop goes on from it, as it would have.
 */
export const firstThatAnswers = <A, R>(
  targets: ReadonlyArray<Target>,
  policy: RetryPolicy,
  health: Health["Type"],
  attempt: Attempt<A, R>,
  random: () => number = Math.random
): Effect.Effect<Answered<A>, RoutesFailed, R> => {
  const first = targets[0]
  if (first === undefined || policy.maxAttempts < 1) return allRoutes(targets, policy, health, attempt, random)
  return thenAtOnce(tryRoute(policy, first, 1, 0, health, attempt), (tried) =>
    tried._tag === "Tried" && Either.isRight(tried.result)
      ? Effect.succeed({
        value: tried.result.right,
        target: first,
        attempts: [{ ...attemptLog(first, tried), outcome: "ok" as const }],
        startedAt: tried.startedAt
      })
      : allRoutes(targets, policy, health, attempt, random, tried))
}

/** An attempt's line in the call's log without its outcome. */
const attemptLog = (target: Target, { endedAt, startedAt }: { readonly startedAt: number; readonly endedAt: number }) => ({
  model: target.model.id,
  tier: target.model.tier,
  deployment: target.deployment.id,
  latencyMs: Math.round(endedAt - startedAt)
})

/** Every route in turn, pass after pass, from the first route's first try when it was made already. */
const allRoutes = <A, R>(
  targets: ReadonlyArray<Target>,
  policy: RetryPolicy,
  health: Health["Type"],
  attempt: Attempt<A, R>,
  random: () => number,
  firstTry?: Try<A>
): Effect.Effect<Answered<A>, RoutesFailed, R> =>
  Effect.gen(function*() {
    const attempts: Array<AttemptLog> = []
    const failures: Array<UpstreamFailure> = []
    const untranslatable: Array<{ error: RequestNotTranslatable; target: Target }> = []
    // A call counts against a deployment's health once, however often it retried it.
    const blamed = new Set<string>()
    let pending: ReadonlyArray<{ readonly target: Target; readonly retryAfterMs: number }> = targets.map((target) => ({
      target,
      retryAfterMs: 0
    }))
    // The first route's first try, when it was made before the loop: the loop's first iteration.
    let before = firstTry
    calls: for (let pass = 0; pending.length > 0 && attempts.length < policy.maxAttempts; pass++) {
      const retry: Array<{ target: Target; retryAfterMs: number }> = []
      for (const { retryAfterMs, target } of pending) {
        if (attempts.length >= policy.maxAttempts) break
        const made = before
        before = undefined
        const waitMs = pass > 0 ? Math.max(retryAfterMs, backoffMs(policy, pass, random)) : 0
        const tried = made ?? (yield* tryRoute(policy, target, attempts.length + 1, waitMs, health, attempt))
        if (tried._tag === "PastDeadline") break calls
        if (tried._tag === "NotAdmitted") continue
        const { result, startedAt } = tried
        const log = attemptLog(target, tried)
        const latencyMs = log.latencyMs
        if (Either.isRight(result)) {
          attempts.push({ ...log, outcome: "ok" })
          return { value: result.right, target, attempts, startedAt }
        }
        if (result.left._tag === "RequestNotTranslatable") {
          // Nothing was sent: not the deployment's fault, and another plugin may express the request.
          attempts.push({ ...log, outcome: "error", failure: NOT_TRANSLATABLE })
          untranslatable.push({ error: result.left, target })
          continue
        }
        const failure = result.left
        failures.push(failure)
        attempts.push({
          ...log,
          outcome: failure.kind === "timeout" ? "timeout" : "error",
          failure: describeFailure(failure)
        })
        if (isRequestFault(failure)) return yield* Effect.fail<RoutesFailed>({ attempts, failures, untranslatable, refused: { failure, target } })
        const deploymentFault = isDeploymentFault(failure)
        // Our credential or config will not mend by itself: the circuit opens at once.
        const cooldown = deploymentFault ? policy.faultCooldownSeconds : failure.retryAfterSeconds
        if (!blamed.has(target.deployment.id)) {
          blamed.add(target.deployment.id)
          yield* health.record({
            deployment: target.deployment.id,
            model: target.model.id,
            ok: false,
            failure: failure.kind,
            ...(failure.status !== undefined ? { status: failure.status } : {}),
            latencyMs,
            attempt: attempts.length,
            ...(cooldown !== undefined ? { retryAfterSeconds: cooldown } : {})
          })
        }
        const askedMs = (failure.retryAfterSeconds ?? 0) * 1000
        // Trying the same credential again within the call cannot help.
        if (!deploymentFault && askedMs <= policy.maxRetryWaitMs) retry.push({ target, retryAfterMs: askedMs })
      }
      pending = retry
    }
    return yield* Effect.fail<RoutesFailed>({ attempts, failures, untranslatable })
  })
