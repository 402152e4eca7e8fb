/**
 * Scores retrieval on the evaluation set (test/fixtures/retrieval) through a
 * real gateway: the documents are added to an agent over HTTP (chunked and
 * embedded as any document is), each question is embedded over HTTP, and the
 * agent's chunks are ranked three ways — full text only, vectors only, and
 * the hybrid the runs use. Two levels: the right document among the top k,
 * and the answering passage (most of its words) inside one of the top k chunks.
 */
import { Effect } from "effect"
import { Retrieval, type Source } from "../../services/Retrieval.ts"
import { cosine } from "../../layers/knowledge/fusion.ts"
import { documents, type EvalQuestion, questions } from "../fixtures/retrieval/index.ts"
import type { TestGateway } from "./gateway.ts"

export type Ranking = "full text" | "vectors" | "hybrid"
export const RANKINGS: ReadonlyArray<Ranking> = ["full text", "vectors", "hybrid"]

export interface Scores {
  /** Share of questions whose document is among the top k, by k (1, 3, 5). */
  readonly document: Record<number, number>
  readonly passage: Record<number, number>
}

export interface EvalResult {
  readonly all: Record<Ranking, Scores>
  readonly paraphrased: Record<Ranking, Scores>
}

const words = (text: string) => new Set(text.toLowerCase().match(/[a-z0-9]+/g) ?? [])

/** Most (80%) of the passage's words are in the chunk. */
const holds = (chunk: string, passage: string) => {
  const inChunk = words(chunk)
  const wanted = [...words(passage)]
  return wanted.filter((word) => inChunk.has(word)).length >= 0.8 * wanted.length
}

const KS = [1, 3, 5] as const

/** An agent with the evaluation documents; its id and the eval id of each `doc_`. */
export const loadEvaluationAgent = async (gateway: TestGateway, key: string) => {
  const agent = await gateway.request("POST", "/v1/agents", { key, body: { name: "evaluation", instructions: "" } })
  const evalIdOf = new Map<string, string>()
  for (const document of documents) {
    const added = await gateway.request("POST", `/v1/agents/${agent.body.id}/documents`, {
      key,
      body: { title: document.title, text: document.text }
    })
    if (added.status !== 200) throw new Error(`adding ${document.id}: ${added.status} ${added.text}`)
    evalIdOf.set(added.body.id, document.id)
  }
  return { agentId: agent.body.id as string, evalIdOf }
}

export const evaluateRetrieval = async (gateway: TestGateway, key: string, options: { readonly embeddingModel?: string } = {}) => {
  const { agentId, evalIdOf } = await loadEvaluationAgent(gateway, key)
  const chunks = await gateway.query<{ id: string; document_id: string; title: string; text: string; embedding: ReadonlyArray<number> }>(
    `SELECT c.id, c.document_id, d.title, c.text, c.embedding FROM agent_chunks c JOIN agent_documents d ON d.id = c.document_id
     WHERE c.agent_id = $1`,
    [agentId]
  )
  const embed = async (text: string) =>
    (await gateway.request("POST", "/v1/embeddings", { key, body: { model: options.embeddingModel ?? "svc/embed", input: text } }))
      .body.data[0].embedding as Array<number>

  const ranked = async (question: EvalQuestion): Promise<Record<Ranking, ReadonlyArray<Source>>> => {
    const vector = await embed(question.question)
    const search = (embedding: ReadonlyArray<number> | undefined) =>
      gateway.run(Effect.flatMap(Retrieval, (retrieval) => retrieval.search(agentId, question.question, embedding, 5)))
    const byVector = chunks
      .map((chunk) => ({ chunk, similarity: cosine(vector, chunk.embedding) }))
      .sort((a, b) => b.similarity - a.similarity)
      .slice(0, 5)
      .map(({ chunk, similarity }): Source => ({ documentId: chunk.document_id, chunkId: chunk.id, title: chunk.title, text: chunk.text, score: similarity }))
    return { "full text": await search(undefined), vectors: byVector, hybrid: await search(vector) }
  }

  const score = (results: ReadonlyArray<{ question: EvalQuestion; sources: ReadonlyArray<Source> }>): Scores => {
    const share = (hit: (sources: ReadonlyArray<Source>, question: EvalQuestion) => boolean, k: number) =>
      results.filter(({ question, sources }) => hit(sources.slice(0, k), question)).length / Math.max(1, results.length)
    const document = Object.fromEntries(KS.map((k) => [k, share((top, question) => top.some((source) => evalIdOf.get(source.documentId) === question.document), k)]))
    const passage = Object.fromEntries(KS.map((k) => [k, share((top, question) => top.some((source) => holds(source.text, question.passage)), k)]))
    return { document, passage }
  }

  const answered: Array<{ question: EvalQuestion; ranked: Record<Ranking, ReadonlyArray<Source>> }> = []
  for (const question of questions) answered.push({ question, ranked: await ranked(question) })
  const scoresOf = (subset: typeof answered) =>
    Object.fromEntries(RANKINGS.map((ranking) => [ranking, score(subset.map(({ question, ranked }) => ({ question, sources: ranked[ranking] })))])) as Record<Ranking, Scores>
  const result: EvalResult = {
    all: scoresOf(answered),
    paraphrased: scoresOf(answered.filter(({ question }) => question.paraphrased))
  }
  return { result, agentId, misses: answered.filter(({ question, ranked }) => !ranked.hybrid.slice(0, 3).some((source) => evalIdOf.get(source.documentId) === question.document)).map(({ question }) => question.question) }
}

/** The scores as a table: one row per ranking, recall@1/3/5 for documents then passages. */
export const scoreTable = (title: string, scores: Record<Ranking, Scores>) => {
  const cell = (value: number) => value.toFixed(2)
  const rows = RANKINGS.map((ranking) =>
    `| ${ranking} | ${KS.map((k) => cell(scores[ranking].document[k]!)).join(" | ")} | ${KS.map((k) => cell(scores[ranking].passage[k]!)).join(" | ")} |`
  )
  return [`${title}`, "| ranking | doc@1 | doc@3 | doc@5 | passage@1 | passage@3 | passage@5 |", "|---|---|---|---|---|---|---|", ...rows].join("\n")
}
