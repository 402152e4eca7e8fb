/** What the strategies share: stable tie-breaks, scaling of cost, latency and quality to [0, 1], and leaving candidates out. */
import type { Candidate, Dropped } from "../../services/Router.ts"

/** Cheaper first, then higher quality, then id: the order every strategy falls back on. */
export const byCostThenQuality = (a: Candidate, b: Candidate) =>
  a.expectedCost !== b.expectedCost
    ? (a.expectedCost < b.expectedCost ? -1 : 1)
    : b.model.quality - a.model.quality || a.model.id.localeCompare(b.model.id)

/** 0 for the lowest value, 1 for the highest; all equal → 0. */
const scaled = (values: ReadonlyArray<number>) => {
  const low = Math.min(...values)
  const high = Math.max(...values)
  return (value: number) => (high > low ? (value - low) / (high - low) : 0)
}

/** Prices span orders of magnitude, so cost is compared on a log scale: 0 cheapest, 1 dearest. */
export const costScale = (candidates: ReadonlyArray<Candidate>) => {
  const log = (candidate: Candidate) => Math.log(Number(candidate.expectedCost) + 1)
  const scale = scaled(candidates.map(log))
  return (candidate: Candidate) => scale(log(candidate))
}

/** 0 fastest, 1 slowest among the measured; a model never measured sits in the middle. */
export const latencyScale = (candidates: ReadonlyArray<Candidate>) => {
  const measured = candidates.flatMap((c) => (c.expectedLatencyMs === undefined ? [] : [c.expectedLatencyMs]))
  const scale = scaled(measured)
  return (candidate: Candidate) => (candidate.expectedLatencyMs === undefined ? 0.5 : scale(candidate.expectedLatencyMs))
}

/** 0 lowest quality, 1 highest. */
export const qualityScale = (candidates: ReadonlyArray<Candidate>) => {
  const scale = scaled(candidates.map((c) => c.model.quality))
  return (candidate: Candidate) => scale(candidate.model.quality)
}

/**
 * Leaves out of `order` the candidates `why` gives a reason for, except the first: a mode never leaves
 * out its best, so what remains is never empty.
 */
export const leaveOut = (
  order: ReadonlyArray<Candidate>,
  why: (candidate: Candidate) => string | undefined
): { readonly order: ReadonlyArray<Candidate>; readonly dropped: ReadonlyArray<Dropped> } => {
  const kept: Array<Candidate> = []
  const dropped: Array<Dropped> = []
  for (const [index, candidate] of order.entries()) {
    const reason = index === 0 ? undefined : why(candidate)
    if (reason === undefined) kept.push(candidate)
    else dropped.push({ model: candidate.model.id, reason })
  }
  return { order: kept, dropped }
}
