/**
 * What a caller sees when upstream calls fail: the upstream's own 4xx refusal
 * of the request (not 408/409/425/429) is 400; when every route failed, 504 if
 * they all timed out, else 502. The details, which may name the upstream, go
 * to the operators' log only.
 */
import { Effect } from "effect"
import { InvalidRequest, UpstreamError, UpstreamTimeout } from "../../services/ApiError.ts"
import type { Deployment } from "../../services/Catalogue.ts"
import type { AdapterFailure, UpstreamFailure } from "../../services/Providers.ts"
import { isRequestFault, type RoutesFailed } from "../routing/failover.ts"

const logFailure = (deployment: string, failure: UpstreamFailure) =>
  Effect.logWarning("upstream call failed").pipe(
    Effect.annotateLogs({
      deployment,
      kind: failure.kind,
      status: failure.status ?? null,
      detail: failure.detail
    })
  )

const refusedBy = (failure: UpstreamFailure) =>
  new InvalidRequest({ message: `The model rejected the request (status ${failure.status}).` })

/** A failure of the route that is serving (a stream that broke after its first byte). */
export const toApiError = (deployment: Deployment) =>
(failure: AdapterFailure): Effect.Effect<never, InvalidRequest | UpstreamError | UpstreamTimeout> =>
  failure._tag === "RequestNotTranslatable"
    ? Effect.fail(new InvalidRequest({ message: `${deployment.model} cannot take this request: ${failure.reason}` }))
    : Effect.zipRight(
    logFailure(deployment.id, failure),
    Effect.fail(
      failure.kind === "timeout"
        ? new UpstreamTimeout({ message: "The model did not answer in time." })
        : isRequestFault(failure)
        ? refusedBy(failure)
        : new UpstreamError({ message: "The model's upstream failed; try again." })
    )
  )

/** Every route failed, or the request was refused by one. */
export const routesFailedError = (
  failed: RoutesFailed
): Effect.Effect<never, InvalidRequest | UpstreamError | UpstreamTimeout> =>
  Effect.gen(function*() {
    const failedAttempts = failed.attempts.filter((attempt) => attempt.outcome !== "ok")
    yield* Effect.forEach(failed.failures, (failure, i) => logFailure(failedAttempts[i]?.deployment ?? "?", failure), {
      discard: true
    })
    if (failed.refused !== undefined) return yield* refusedBy(failed.refused.failure)
    const [untranslatable] = failed.untranslatable
    if (untranslatable !== undefined && failed.failures.length === 0) {
      return yield* new InvalidRequest({
        message: `${untranslatable.target.model.id} cannot take this request: ${untranslatable.error.reason}`
      })
    }
    if (failed.attempts.length === 0) {
      return yield* new UpstreamError({
        message: "Every route for this request is recovering from failures; try again shortly."
      })
    }
    if (failed.failures.every((failure) => failure.kind === "timeout")) {
      return yield* new UpstreamTimeout({ message: "No route answered in time." })
    }
    return yield* new UpstreamError({ message: `Every route failed (${failed.attempts.length} attempts); try again.` })
  })
