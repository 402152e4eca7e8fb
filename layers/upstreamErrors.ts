/**
 * What a caller sees when an upstream call fails: timeouts are 504, the
 * upstream's own 4xx refusals (not 408/429) are 400, anything else 502. The
 * detail, which may name the upstream, goes to the operators' log only.
 */
import { Effect } from "effect"
import { InvalidRequest, UpstreamError, UpstreamTimeout } from "../services/ApiError.ts"
import type { Deployment } from "../services/Catalogue.ts"
import type { UpstreamFailure } from "../services/Providers.ts"

export const toApiError = (deployment: Deployment) =>
(failure: UpstreamFailure): Effect.Effect<never, InvalidRequest | UpstreamError | UpstreamTimeout> =>
  Effect.logWarning("upstream call failed").pipe(
    Effect.annotateLogs({
      provider: deployment.provider.id,
      kind: failure.kind,
      status: failure.status ?? null,
      detail: failure.detail
    }),
    Effect.zipRight(
      Effect.fail(
        failure.kind === "timeout"
          ? new UpstreamTimeout({ message: "The model did not answer in time." })
          : failure.kind === "status" && failure.status !== undefined && failure.status >= 400 &&
              failure.status < 500 && failure.status !== 408 && failure.status !== 429
          ? new InvalidRequest({ message: `The model rejected the request (status ${failure.status}).` })
          : new UpstreamError({ message: "The model's upstream failed; try again." })
      )
    )
  )
