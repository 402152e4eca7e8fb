/**
 * One process's rolling window of a deployment's outcomes: the last five
 * minutes or the last 200 outcomes, whichever is fewer. Percentiles here are
 * exact (nearest rank over the samples); the shared numbers use histograms.
 */
import type { DeploymentHealth, Outcome } from "../../services/Health.ts"

export const WINDOW_MS = 5 * 60_000
export const WINDOW_OUTCOMES = 200

/** A success that was not its call's first attempt: the call fell back to this deployment. */
export const isFallback = (outcome: Outcome): boolean => outcome.ok && outcome.attempt > 1

/**
 * Time spent producing output, for throughput: after the first token when a stream reports it,
 * else the whole attempt. Undefined when the outcome says nothing about output.
 */
export const generationMs = (outcome: Outcome): number | undefined => {
  if (!outcome.ok || outcome.outputTokens === undefined || outcome.outputTokens <= 0) return undefined
  const ms = outcome.latencyMs - (outcome.ttftMs ?? 0)
  return ms > 0 ? ms : undefined
}

/** The windowed numbers of `DeploymentHealth` (its breaker fields come from the shared rows). */
export type WindowStats = Pick<
  DeploymentHealth,
  "requests" | "failures" | "fallbacks" | "p50LatencyMs" | "p95LatencyMs" | "p50TtftMs" | "tokensPerSecond"
>

interface Sample {
  readonly at: number
  readonly outcome: Outcome
}

/** Nearest rank: the smallest sample with at least `q` of the samples at or below it. */
export const nearestRank = (sorted: ReadonlyArray<number>, q: number): number | undefined =>
  sorted.length === 0 ? undefined : sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]

/** Where `value` goes in ascending `sorted`: the first index whose value is not below it. */
const lowerBound = (sorted: ReadonlyArray<number>, value: number) => {
  let low = 0
  let high = sorted.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (sorted[middle]! < value) low = middle + 1
    else high = middle
  }
  return low
}

const insertSorted = (sorted: Array<number>, value: number) => void sorted.splice(lowerBound(sorted, value), 0, value)
const removeSorted = (sorted: Array<number>, value: number) => void sorted.splice(lowerBound(sorted, value), 1)

export interface RollingWindow {
  readonly add: (outcome: Outcome, now: number) => void
  readonly stats: (now: number) => WindowStats
}

/**
 * The figures are kept as outcomes come and go: sums, and the latencies and times to first token
 * in sorted order (an insertion or removal is a binary search and a move of at most 200 numbers).
 * Summing and sorting the whole window again after every outcome cost more than a call's routing.
 */
export const makeWindow = (): RollingWindow => {
  // Oldest first, in a ring of the window's size: an outcome in and the oldest out move nothing.
  const samples: Array<Sample | undefined> = new Array(WINDOW_OUTCOMES)
  let oldest = 0
  let held = 0
  const latencies: Array<number> = []
  const ttfts: Array<number> = []
  let failures = 0
  let fallbacks = 0
  let tokens = 0
  let generating = 0
  let cached: WindowStats | undefined

  const count = (outcome: Outcome, sign: 1 | -1) => {
    if (!outcome.ok) {
      failures += sign
      return
    }
    if (isFallback(outcome)) fallbacks += sign
    const update = sign === 1 ? insertSorted : removeSorted
    update(latencies, outcome.latencyMs)
    if (outcome.ttftMs !== undefined) update(ttfts, outcome.ttftMs)
    const ms = generationMs(outcome)
    if (ms !== undefined) {
      tokens += sign * outcome.outputTokens!
      generating += sign * ms
    }
  }

  const dropOldest = () => {
    count(samples[oldest]!.outcome, -1)
    samples[oldest] = undefined
    oldest = (oldest + 1) % WINDOW_OUTCOMES
    held--
    cached = undefined
  }

  const evict = (now: number) => {
    while (held > 0 && samples[oldest]!.at <= now - WINDOW_MS) dropOldest()
  }

  return {
    add: (outcome, now) => {
      if (held === WINDOW_OUTCOMES) dropOldest()
      samples[(oldest + held) % WINDOW_OUTCOMES] = { at: now, outcome }
      held++
      count(outcome, 1)
      cached = undefined
      evict(now)
    },
    stats: (now) => {
      evict(now)
      return cached ??= {
        requests: held,
        failures,
        fallbacks,
        p50LatencyMs: nearestRank(latencies, 0.5),
        p95LatencyMs: nearestRank(latencies, 0.95),
        p50TtftMs: nearestRank(ttfts, 0.5),
        tokensPerSecond: generating > 0 ? (tokens * 1000) / generating : undefined
      }
    }
  }
}
