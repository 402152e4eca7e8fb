/**
 * What a router mode knows of each model it ranks: the request's expected
 * price at the model's catalogue price, and, on the model's best measured
 * deployment, the expected time to a whole answer (time to first token plus
 * the output at the measured throughput, else the measured latency) and the
 * measured p95 latency.
 */
import type { Catalogue, Model } from "../../services/Catalogue.ts"
import type { Health } from "../../services/Health.ts"
import type { Pricing } from "../../services/Pricing.ts"
import type { Candidate } from "../../services/Router.ts"

interface Measured {
  readonly expectedLatencyMs: number | undefined
  readonly p95LatencyMs: number | undefined
}

const unmeasured: Measured = { expectedLatencyMs: undefined, p95LatencyMs: undefined }

/** The deployment with the lowest expected time to a whole answer, and its p95 latency. */
const measuredLatency = (
  catalogue: Catalogue["Type"],
  health: Health["Type"],
  model: Model,
  outputTokens: number
): Measured => {
  let best = unmeasured
  for (const deployment of catalogue.deployments(model.id)) {
    const view = health.view(deployment.id)
    const expected = view.p50TtftMs !== undefined && view.tokensPerSecond !== undefined && view.tokensPerSecond > 0
      ? view.p50TtftMs + (outputTokens / view.tokensPerSecond) * 1000
      : view.p50LatencyMs
    if (expected !== undefined && (best.expectedLatencyMs === undefined || expected < best.expectedLatencyMs)) {
      best = { expectedLatencyMs: expected, p95LatencyMs: view.p95LatencyMs }
    }
  }
  return best
}

/** The candidate view of each model for a request of `inputTokens` expected to produce `expectedOutput`. */
export const candidateOf = (
  catalogue: Catalogue["Type"],
  health: Health["Type"],
  pricing: Pricing["Type"],
  inputTokens: number,
  expectedOutput: number
) =>
(model: Model): Candidate => ({
  model,
  expectedCost: pricing.amount(model.pricing, { inputTokens, outputTokens: expectedOutput }),
  ...measuredLatency(catalogue, health, model, expectedOutput)
})
