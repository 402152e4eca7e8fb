/**
 * Weighted reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009): each
 * ranking adds weight/(K + rank) to the chunks it holds, rank counted from 1.
 * It needs no calibration between full-text ranks and cosine similarities,
 * which live on different scales, and a chunk both rankings like rises above
 * one only one of them likes.
 *
 * K and the vector ranking's weight were measured on the retrieval
 * evaluation set (bench/retrieval.ts): with two rankings, the full-text one
 * the stronger, a small K (the top ranks count) and the vectors at 0.6 of the
 * words' weight gave the best recall at 1 and at 3; the customary K = 60 with
 * equal weights let weaker vector matches push the right chunk out of the top 3.
 */

export const RRF_K = 5

/** How much the vector ranking counts beside the full-text one (1). */
export const VECTOR_WEIGHT = 0.6

export interface Ranking {
  readonly ids: ReadonlyArray<string>
  readonly weight: number
}

/** Ids with their fused scores, best first (ties: the order they first appeared in). */
export const fuse = (rankings: ReadonlyArray<Ranking>): Array<{ id: string; score: number }> => {
  const scores = new Map<string, number>()
  for (const { ids, weight } of rankings) {
    ids.forEach((id, index) => scores.set(id, (scores.get(id) ?? 0) + weight / (RRF_K + index + 1)))
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
