/**
 * `auto`: a balance of quality, cost and latency, weighted by the request's shape.
 *
 * - demanding (tools, structured output, a reasoning ask, or over 8,000 input
 *   tokens): quality 0.6, cost 0.25, latency 0.15;
 * - simple (at most 500 input tokens, at most 500 output tokens asked, no
 *   images): quality 0.2, cost 0.5, latency 0.3;
 * - anything else is standard: quality 0.4, cost 0.35, latency 0.25.
 *
 * Each term is scaled to [0, 1] among the candidates (cost on a log scale; an
 * unmeasured latency counts as the middle); the highest score wins, ties go
 * to the cheaper.
 */
import { type Candidate, type RequestShape, registerStrategy, type RouterStrategy } from "../../services/Router.ts"
import { NoOptions } from "../../services/Registry.ts"
import { byCostThenQuality, costScale, latencyScale, qualityScale } from "./scoring.ts"

type RequestClass = "demanding" | "standard" | "simple"

export const classify = (shape: RequestShape): RequestClass => {
  if (shape.tools || shape.structuredOutput || shape.reasoning || shape.inputTokens > 8000) return "demanding"
  if (shape.inputTokens <= 500 && (shape.requestedOutput ?? 0) <= 500 && !shape.images) return "simple"
  return "standard"
}

const WEIGHTS: Record<RequestClass, { quality: number; cost: number; latency: number }> = {
  demanding: { quality: 0.6, cost: 0.25, latency: 0.15 },
  standard: { quality: 0.4, cost: 0.35, latency: 0.25 },
  simple: { quality: 0.2, cost: 0.5, latency: 0.3 }
}

export const strategy: RouterStrategy<typeof NoOptions.Type> = {
  id: "auto",
  options: NoOptions,
  rank: (candidates, shape) => {
    const requestClass = classify(shape)
    const weights = WEIGHTS[requestClass]
    const quality = qualityScale(candidates)
    const cost = costScale(candidates)
    const latency = latencyScale(candidates)
    const score = (c: Candidate) =>
      weights.quality * quality(c) + weights.cost * (1 - cost(c)) + weights.latency * (1 - latency(c))
    const scored = candidates.map((candidate) => ({ candidate, score: score(candidate) }))
    scored.sort((a, b) => b.score - a.score || byCostThenQuality(a.candidate, b.candidate))
    return {
      order: scored.map((entry) => entry.candidate),
      reason: `balanced for a ${requestClass} request`,
      dropped: []
    }
  }
}

export const AutoStrategy = registerStrategy(strategy)
