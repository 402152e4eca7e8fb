/**
 * CORS for browser apps, off unless the config lists origins (`cors.origins`):
 * then a listed origin (or any, with `*`) gets its preflight answered and the
 * response headers a client reads (request id, cost, receipt, rate limits)
 * exposed. Keys travel in `Authorization`, never cookies, so credentials
 * mode stays off.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Layer } from "effect"

const EXPOSED = [
  "x-request-id",
  "x-svc-receipt-id",
  "x-svc-receipt-pending",
  "x-svc-total-usd",
  "x-svc-upstream-cost-usd",
  "x-svc-margin-usd",
  "idempotent-replayed",
  "retry-after",
  "x-ratelimit-limit-requests",
  "x-ratelimit-remaining-requests",
  "x-ratelimit-reset-requests",
  "x-ratelimit-limit-tokens",
  "x-ratelimit-remaining-tokens",
  "x-ratelimit-reset-tokens"
]

/** The CORS middleware for `origins`, or nothing when the list is empty. */
export const corsFor = (origins: ReadonlyArray<string>): Layer.Layer<never> => {
  if (origins.length === 0) return Layer.empty
  const allowed = new Set(origins)
  return HttpApiBuilder.middlewareCors({
    // A predicate, so the answer names the caller's own origin (with `Vary: Origin`) or none.
    allowedOrigins: allowed.has("*") ? () => true : (origin) => allowed.has(origin),
    allowedMethods: ["GET", "POST", "PATCH", "DELETE"],
    exposedHeaders: EXPOSED,
    maxAge: 600
  })
}
