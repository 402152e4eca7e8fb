/**
 * Gemini answers a bad or expired API key with 400 `INVALID_ARGUMENT` (reason
 * `API_KEY_INVALID`), the same status as a caller's bad request. It is our
 * credential that failed, so it is passed on as the 401 it means: the
 * deployment is blamed and the call fails over (layers/upstream/failover.ts),
 * never the caller.
 */
import { UpstreamFailure } from "../../../services/Providers.ts"

const CREDENTIAL_REASONS = ["reason=API_KEY_INVALID", "reason=API_KEY_EXPIRED", "reason=API_KEY_SERVICE_BLOCKED"]

export const credentialFailure = (failure: UpstreamFailure): UpstreamFailure =>
  failure.kind === "status" && failure.status === 400 && CREDENTIAL_REASONS.some((reason) => failure.detail.includes(reason))
    ? new UpstreamFailure({ ...failure, status: 401 })
    : failure
