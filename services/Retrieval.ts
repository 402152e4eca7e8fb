/**
 * Hybrid retrieval over an agent's knowledge: full-text ranking (stemmed,
 * any of the query's words) and vector similarity to the query's embedding,
 * each ranking the agent's chunks, fused by reciprocal rank. The query's
 * embedding is made (and billed) by the caller, with the agent's model; without
 * one (a question that may not go to the embeddings upstream) the ranking is
 * full text only.
 */
import { Context, type Effect } from "effect"

/** One retrieved chunk, as a run cites it. */
export interface Source {
  readonly documentId: string
  readonly chunkId: string
  /** The document's title. */
  readonly title: string
  /** The chunk's text: what reaches the prompt. */
  readonly text: string
  /** The fused score, Σ weight/(5 + rank) over the rankings that hold the chunk (layers/knowledge/fusion.ts); higher is better. */
  readonly score: number
}

/** Chunks a run retrieves unless told otherwise. */
export const DEFAULT_TOP_K = 5

export class Retrieval extends Context.Tag("svc/Retrieval")<Retrieval, {
  /** The agent's `k` best chunks for `query`, best first; none when the agent has no knowledge. */
  readonly search: (
    agentId: string,
    query: string,
    queryEmbedding: ReadonlyArray<number> | undefined,
    k: number
  ) => Effect.Effect<ReadonlyArray<Source>>
}>() {}
