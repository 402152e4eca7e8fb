/**
 * What a router mode knows of each model it ranks: the request's expected
 * price at the model's catalogue price, and the expected time to a whole
 * answer on its best measured deployment (time to first token plus the output
 * at the measured throughput, else the measured latency).
 */
import type { Catalogue, Model } from "../../services/Catalogue.ts"
import type { Health } from "../../services/Health.ts"
import type { Pricing } from "../../services/Pricing.ts"
import type { Candidate } from "../../services/Router.ts"

/** Expected time to a whole answer on the model's best measured deployment. */
const expectedLatencyMs = (
  catalogue: Catalogue["Type"],
  health: Health["Type"],
  model: Model,
  outputTokens: number
): number | undefined => {
  let best: number | undefined
  for (const deployment of catalogue.deployments(model.id)) {
    const view = health.view(deployment.id)
    const expected = view.p50TtftMs !== undefined && view.tokensPerSecond !== undefined && view.tokensPerSecond > 0
      ? view.p50TtftMs + (outputTokens / view.tokensPerSecond) * 1000
      : view.p50LatencyMs
    if (expected !== undefined && (best === undefined || expected < best)) best = expected
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
  expectedLatencyMs: expectedLatencyMs(catalogue, health, model, expectedOutput)
})
