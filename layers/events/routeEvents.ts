/**
 * The routing events of a call, from its attempts: `provider.route` for every
 * attempt (model, tier, why, attempt number; the first also names the models
 * the router mode left out) and `provider.fallback` for every
 * move to another attempt (from, to, why). They name models, never providers.
 */
import type { CallEvent } from "../../services/Ledger.ts"
import type { Route } from "../../services/RoutePlanner.ts"
import type { AttemptLog } from "../../services/Upstream.ts"

export const routeEvents = (
  attempts: ReadonlyArray<AttemptLog>,
  plan: Pick<Route, "reason" | "dropped">
): ReadonlyArray<CallEvent> => {
  // A loop, not `flatMap` and a pair per retry: every call makes its events here, most of one attempt.
  const events: Array<CallEvent> = []
  for (let i = 0; i < attempts.length; i++) {
    const attempt = attempts[i]!
    const previous = attempts[i - 1]
    if (previous !== undefined) {
      events.push({
        type: "provider.fallback",
        data: {
          from_model: previous.model,
          to_model: attempt.model,
          attempt: i + 1,
          reason: previous.failure ?? "failure"
        }
      })
    }
    const data: Record<string, unknown> = {
      model: attempt.model,
      tier: attempt.tier,
      reason: previous === undefined ? plan.reason : `retry after ${previous.failure ?? "a failure"}`,
      attempt: i + 1,
      outcome: attempt.outcome
    }
    // What the router mode left out, and why: told once, with the first route (added, not spread in).
    if (previous === undefined && plan.dropped.length > 0) data.dropped = plan.dropped
    events.push({ type: "provider.route", data })
  }
  return events
}
