/**
 * Reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009): each ranking
 * adds 1/(K + rank) to the chunks it holds, rank counted from 1. It needs no
 * calibration between full-text ranks and cosine similarities, which live on
 * different scales, and a chunk both rankings like rises above one only one
 * of them likes.
 */

/** The usual constant: it damps the difference between the very first ranks. */
export const RRF_K = 60

/** Ids with their fused scores, best first (ties: the order they first appeared in). */
export const fuse = (rankings: ReadonlyArray<ReadonlyArray<string>>): Array<{ id: string; score: number }> => {
  const scores = new Map<string, number>()
  for (const ranking of rankings) {
    ranking.forEach((id, index) => scores.set(id, (scores.get(id) ?? 0) + 1 / (RRF_K + index + 1)))
  }
  return [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score)
}

/** Cosine similarity of two vectors of one length (0 when either is all zeros). */
export const cosine = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): number => {
  let dot = 0
  let normA = 0
  let normB = 0
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!
    normA += a[i]! * a[i]!
    normB += b[i]! * b[i]!
  }
  return normA === 0 || normB === 0 ? 0 : dot / Math.sqrt(normA * normB)
}
