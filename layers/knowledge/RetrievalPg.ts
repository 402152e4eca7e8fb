/**
 * Hybrid retrieval in PostgreSQL. Full text: the query's stemmed words,
 * any of them (`|`), ranked by `ts_rank` normalised by document length, on
 * the chunks' GIN index. Vectors: exact cosine ranking of the agent's chunk
 * embeddings, by pgvector in the database where it is installed
 * (vectorSearch.ts; always on PGlite), else by computing the cosine in SQL:
 * the same ranking either way (an approximate index is for later, at larger scale).
 * Each side contributes its best `CANDIDATES`; weighted reciprocal rank
 * fusion (fusion.ts) orders the union.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { Retrieval, type Source } from "../../services/Retrieval.ts"
import { fuse, VECTOR_WEIGHT } from "./fusion.ts"
import { prepareVectorSearch, toFloat8Array, vectorLiteral } from "./vectorSearch.ts"

/** How many chunks each ranking hands to the fusion. */
const CANDIDATES = 50

interface ChunkRow {
  readonly id: string
  readonly document_id: string
  readonly title: string
  readonly text: string
}

export const RetrievalPg = Layer.effect(
  Retrieval,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const lexical = (agentId: string, query: string) =>
      sql<ChunkRow>`
        WITH q AS (
          SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')) AS query
          FROM unnest(to_tsvector('english', ${query}))
        )
        SELECT c.id, c.document_id, d.title, c.text
        FROM agent_chunks c JOIN agent_documents d ON d.id = c.document_id, q
        WHERE c.agent_id = ${agentId} AND c.search @@ q.query
        ORDER BY ts_rank(c.search, q.query, 1) DESC, c.id
        LIMIT ${CANDIDATES}`

    const inDatabase = yield* prepareVectorSearch(sql)

    const semanticInDatabase = (agentId: string, embedding: ReadonlyArray<number>) =>
      sql<ChunkRow>`
        SELECT c.id, c.document_id, d.title, c.text
        FROM (
          SELECT chunk_id, embedding <=> ${vectorLiteral(embedding)}::vector AS distance
          FROM agent_chunk_vectors
          WHERE agent_id = ${agentId} AND dimensions = ${embedding.length}
          ORDER BY distance, chunk_id
          LIMIT ${CANDIDATES}
        ) nearest
        JOIN agent_chunks c ON c.id = nearest.chunk_id JOIN agent_documents d ON d.id = c.document_id
        ORDER BY nearest.distance, nearest.chunk_id`

    // Without pgvector: the same exact ranking, computed where the vectors are (no vector leaves the database).
    const semanticScan = (agentId: string, embedding: ReadonlyArray<number>) =>
      sql<ChunkRow>`
        SELECT c.id, c.document_id, d.title, c.text
        FROM agent_chunks c JOIN agent_documents d ON d.id = c.document_id,
          LATERAL (
            SELECT sum(x::float8 * y) AS dot, sum(x::float8 * x) AS squares
            FROM unnest(c.embedding, ${toFloat8Array(embedding)}::float8[]) AS t(x, y)
          ) s
        WHERE c.agent_id = ${agentId} AND array_length(c.embedding, 1) = ${embedding.length}
        ORDER BY s.dot / nullif(sqrt(s.squares), 0) DESC NULLS LAST, c.id
        LIMIT ${CANDIDATES}`

    return Retrieval.of({
      search: (agentId, query, queryEmbedding, k) =>
        Effect.gen(function*() {
          const [byWords, byMeaning] = yield* Effect.all([
            lexical(agentId, query),
            queryEmbedding === undefined
              ? Effect.succeed([])
              : inDatabase
              ? semanticInDatabase(agentId, queryEmbedding)
              : semanticScan(agentId, queryEmbedding)
            // Two statements at once on a server's pool (the embedded database runs them in turn).
          ], { concurrency: 2 })
          const rows = new Map<string, ChunkRow>()
          for (const row of [...byWords, ...byMeaning]) rows.set(row.id, row)
          return fuse([
            { ids: byWords.map((row) => row.id), weight: 1 },
            { ids: byMeaning.map((row) => row.id), weight: VECTOR_WEIGHT }
          ])
            .slice(0, k)
            .map(({ id, score }): Source => {
              const row = rows.get(id)!
              return { documentId: row.document_id, chunkId: row.id, title: row.title, text: row.text, score }
            })
        }).pipe(Effect.orDie)
    })
  })
)
