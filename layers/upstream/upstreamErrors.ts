/**
 * What a caller sees when upstream calls fail: the upstream's own 4xx refusal
 * of the request (not 408/409/425/429, and not 401/403/404, which blame our
 * credential or config), or a plugin that cannot express it, is
 * `RefusedByModel` (400); when every route failed, `UpstreamTimeout` (504) if
 * they all timed out, else `UpstreamError` (502). The details, which may name
 * the upstream, go to the operators' log only.
 */
import { Effect } from "effect"
import { RefusedByModel, UpstreamError, UpstreamTimeout } from "../../services/ApiError.ts"
import type { Deployment } from "../../services/Catalogue.ts"
import type { AdapterFailure, UpstreamFailure } from "../../services/Providers.ts"
import type { RoutesFailed } from "../../services/Upstream.ts"
import { isRequestFault, NOT_TRANSLATABLE } from "./failover.ts"

/** What a call can fail with once its upstreams failed it. */
export type UpstreamCallError = RefusedByModel | UpstreamError | UpstreamTimeout

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
  new RefusedByModel({ message: `The model rejected the request (status ${failure.status}).` })

const notTranslatable = (model: string, reason: string) =>
  new RefusedByModel({ message: `${model} cannot take this request: ${reason}` })

/** A failure of the route that is serving (a stream that broke after its first byte, an embeddings call). */
export const toApiError = (deployment: Deployment) =>
(failure: AdapterFailure): Effect.Effect<never, UpstreamCallError> =>
  failure._tag === "RequestNotTranslatable"
    ? Effect.fail(notTranslatable(deployment.model, failure.reason))
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

/** Every route failed, or the request was refused by one, or no plugin could express it. */
export const routesFailedError = (failed: RoutesFailed): Effect.Effect<never, UpstreamCallError> =>
  Effect.gen(function*() {
    const failedAttempts = failed.attempts.filter((attempt) => attempt.outcome !== "ok" && attempt.failure !== NOT_TRANSLATABLE)
    yield* Effect.forEach(failed.failures, (failure, i) => logFailure(failedAttempts[i]?.deployment ?? "?", failure), {
      discard: true
    })
    if (failed.refused !== undefined) return yield* refusedBy(failed.refused.failure)
    const [untranslatable] = failed.untranslatable
    if (untranslatable !== undefined && failed.failures.length === 0) {
      return yield* notTranslatable(untranslatable.target.model.id, untranslatable.error.reason)
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
