/**
 * `fast`: lowest expected latency, measured per deployment (time to first
 * token plus the output at the measured throughput). Models never measured
 * come after measured ones, cheapest first (until traffic measures them).
 */
import { type Candidate, registerStrategy, type RouterStrategy } from "../../services/Router.ts"
import { NoOptions } from "../../services/Registry.ts"
import { byCostThenQuality } from "./scoring.ts"

const byLatency = (a: Candidate, b: Candidate) => {
  if (a.expectedLatencyMs === undefined || b.expectedLatencyMs === undefined) {
    if (a.expectedLatencyMs !== b.expectedLatencyMs) return a.expectedLatencyMs === undefined ? 1 : -1
    return byCostThenQuality(a, b)
  }
  return a.expectedLatencyMs - b.expectedLatencyMs || byCostThenQuality(a, b)
}

export const strategy: RouterStrategy = {
  id: "fast",
  options: NoOptions,
  rank: (candidates) => {
    const order = [...candidates].sort(byLatency)
    return {
      order,
      reason: order[0]!.expectedLatencyMs === undefined ? "no latency measured yet: cheapest" : "lowest expected latency"
    }
  }
}

export const FastStrategy = registerStrategy(strategy)
