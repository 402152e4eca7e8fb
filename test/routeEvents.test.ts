/** The routing events of a call, from its attempts: who was tried, why, what was left out, and each fallback. */
import { describe, expect, it } from "vitest"
import { routeEvents } from "../layers/events/routeEvents.ts"
import type { AttemptLog } from "../services/Upstream.ts"

const attempt = (model: string, outcome: AttemptLog["outcome"], failure?: string): AttemptLog => ({
  model,
  tier: "third_party",
  deployment: `${model}/0`,
  outcome,
  latencyMs: 1,
  ...(failure !== undefined ? { failure } : {})
})

describe("route events", () => {
  it("tells the first route's reason and the models the mode left out, once, then each fallback and why", () => {
    const dropped = [{ model: "svc/slow", reason: "p95 far above the best" }]
    const events = routeEvents([attempt("svc/a", "error", "status 503"), attempt("svc/b", "ok")], {
      reason: "fast: lowest expected latency",
      dropped
    })
    expect(events).toEqual([
      {
        type: "provider.route",
        data: { model: "svc/a", tier: "third_party", reason: "fast: lowest expected latency", attempt: 1, outcome: "error", dropped }
      },
      { type: "provider.fallback", data: { from_model: "svc/a", to_model: "svc/b", attempt: 2, reason: "status 503" } },
      {
        type: "provider.route",
        data: { model: "svc/b", tier: "third_party", reason: "retry after status 503", attempt: 2, outcome: "ok" }
      }
    ])
    // Nothing left out: no `dropped` at all.
    expect(routeEvents([attempt("svc/a", "ok")], { reason: "requested model", dropped: [] })[0]!.data).not.toHaveProperty("dropped")
  })
})
