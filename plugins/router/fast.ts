/**
 * `fast`: lowest expected latency, measured per deployment (time to first
 * token plus the output at the measured throughput). Models never measured
 * come after measured ones, cheapest first (until traffic measures them).
 *
 * It also leaves out the slow outliers: a model whose measured p95 latency is
 * more than `maxP95Ratio` (default 3) times the best measured p95 among the
 * candidates. A model never measured is kept, and so is the first.
 */
import { Schema } from "effect"
import { type Candidate, registerStrategy, type RouterStrategy } from "../../services/Router.ts"
import { byCostThenQuality, leaveOut } from "./scoring.ts"

export const FastOptions = Schema.Struct({
  /** How many times the best measured p95 latency a model's own p95 may be before it is left out. */
  maxP95Ratio: Schema.optionalWith(Schema.Number.pipe(Schema.finite(), Schema.greaterThanOrEqualTo(1)), {
    default: () => 3
  })
})
export type FastOptions = typeof FastOptions.Type

const byLatency = (a: Candidate, b: Candidate) => {
  if (a.expectedLatencyMs === undefined || b.expectedLatencyMs === undefined) {
    if (a.expectedLatencyMs !== b.expectedLatencyMs) return a.expectedLatencyMs === undefined ? 1 : -1
    return byCostThenQuality(a, b)
  }
  return a.expectedLatencyMs - b.expectedLatencyMs || byCostThenQuality(a, b)
}

/** Why a candidate's tail latency is too far above the best measured p95, if it is. */
const slowOutlier = (candidates: ReadonlyArray<Candidate>, maxP95Ratio: number) => {
  const measured = candidates.flatMap((c) => (c.p95LatencyMs === undefined ? [] : [c.p95LatencyMs]))
  if (measured.length === 0) return () => undefined
  const best = Math.min(...measured)
  // A best of 0 ms (a loopback upstream) would make every other model an outlier: measure from 1 ms.
  const limit = Math.max(best, 1) * maxP95Ratio
  return (candidate: Candidate) =>
    candidate.p95LatencyMs !== undefined && candidate.p95LatencyMs > limit
      ? `p95 latency ${Math.round(candidate.p95LatencyMs)} ms is over ${maxP95Ratio}× the best (${Math.round(best)} ms)`
      : undefined
}

export const strategy: RouterStrategy<FastOptions> = {
  id: "fast",
  options: FastOptions,
  rank: (candidates, _shape, { maxP95Ratio }) => {
    const { dropped, order } = leaveOut([...candidates].sort(byLatency), slowOutlier(candidates, maxP95Ratio))
    return {
      order,
      reason: order[0]!.expectedLatencyMs === undefined ? "no latency measured yet: cheapest" : "lowest expected latency",
      dropped
    }
  }
}

export const FastStrategy = registerStrategy(strategy)
