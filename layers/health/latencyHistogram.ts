/**
 * Fixed log-scale histograms of milliseconds, so that numbers kept by
 * different processes (and different deployments) merge by adding counts.
 *
 * Bounds: bucket 0 holds [0, 1] ms; bucket i (1 ≤ i < 80) holds
 * (2^((i-1)/4), 2^(i/4)] ms, four buckets per doubling, each about 19% wider
 * than the one below; bucket 80 holds everything above 2^(79/4) ms (≈ 14.7
 * minutes). A percentile read from a histogram lies in the same bucket as the
 * exact one, so it is within a factor 2^(1/4) of it.
 *
 * A histogram is sparse: bucket index → count (stored as a JSON object).
 */

export type Histogram = Map<number, number>

const PER_DOUBLING = 4
export const LAST_BUCKET = 80

/** The bucket a value falls in. */
export const bucketOf = (ms: number): number => {
  if (!(ms > 1)) return 0
  return Math.min(Math.ceil(PER_DOUBLING * Math.log2(ms)), LAST_BUCKET)
}

/** Inclusive upper bound of a bucket (the overflow bucket has none). */
export const upperBound = (bucket: number): number => (bucket >= LAST_BUCKET ? Infinity : 2 ** (bucket / PER_DOUBLING))

const lowerBound = (bucket: number): number => (bucket === 0 ? 0 : 2 ** ((bucket - 1) / PER_DOUBLING))

export const add = (histogram: Histogram, ms: number, count = 1): void => {
  const bucket = bucketOf(ms)
  histogram.set(bucket, (histogram.get(bucket) ?? 0) + count)
}

/** Adds `from`'s counts into `into`. */
export const mergeInto = (into: Histogram, from: Histogram): void => {
  for (const [bucket, count] of from) into.set(bucket, (into.get(bucket) ?? 0) + count)
}

export const total = (histogram: Histogram): number => {
  let sum = 0
  for (const count of histogram.values()) sum += count
  return sum
}

/**
 * The `q` quantile (0 < q ≤ 1) by nearest rank, placed inside its bucket by where the rank falls
 * among the bucket's counts (geometrically: the bounds are log-scale). Undefined when empty.
 */
export const quantile = (histogram: Histogram, q: number): number | undefined => {
  const n = total(histogram)
  if (n === 0) return undefined
  const rank = Math.max(1, Math.ceil(q * n))
  let below = 0
  for (const bucket of [...histogram.keys()].sort((a, b) => a - b)) {
    const count = histogram.get(bucket)!
    if (below + count >= rank) {
      const position = (rank - below - 0.5) / count
      const low = lowerBound(bucket)
      if (bucket === 0) return position
      if (bucket >= LAST_BUCKET) return low
      return low * (upperBound(bucket) / low) ** position
    }
    below += count
  }
  return undefined
}

/** The JSON form stored in the database. */
export const toJson = (histogram: Histogram): Record<string, number> => Object.fromEntries(histogram)

export const fromJson = (json: Record<string, number | string>): Histogram => {
  const histogram: Histogram = new Map()
  for (const [bucket, count] of Object.entries(json)) histogram.set(Number(bucket), Number(count))
  return histogram
}
