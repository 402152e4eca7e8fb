/**
 * Agents, documents and chunks in PostgreSQL. Every statement names the
 * account, so another account's agent is a miss like an unknown one. A
 * document's row and its chunks are written in one transaction with the
 * agent's document count; deleting cascades to the chunks.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { type Agent, type AgentDocument, type AgentRouting, Agents } from "../../services/Agents.ts"
import { EventLog } from "../../services/EventLog.ts"
import { Ids } from "../../services/Ids.ts"
import { pageFromRows, startOf } from "../storage/pageRows.ts"
import { agentNotFound, documentNotFound } from "./agentRefusals.ts"

interface AgentRow {
  readonly id: string
  readonly account_id: string
  readonly name: string
  readonly instructions: string
  readonly routing: AgentRouting
  readonly embedding_model: string
  readonly conversation_cap: number
  readonly conversation_count: number
  readonly document_count: number
  readonly created_at: Date
}

interface DocumentRow {
  readonly id: string
  readonly agent_id: string
  readonly title: string
  readonly characters: number
  readonly chunk_count: number
  readonly receipt_id: string | null
  readonly created_at: Date
}

const toAgent = (row: AgentRow): Agent => ({
  id: row.id,
  accountId: row.account_id,
  name: row.name,
  instructions: row.instructions,
  routing: row.routing,
  embeddingModel: row.embedding_model,
  conversationCap: row.conversation_cap,
  conversationCount: row.conversation_count,
  documentCount: row.document_count,
  createdAt: row.created_at
})

const toDocument = (row: DocumentRow): AgentDocument => ({
  id: row.id,
  agentId: row.agent_id,
  title: row.title,
  characters: row.characters,
  chunkCount: row.chunk_count,
  receiptId: row.receipt_id,
  createdAt: row.created_at
})

/** A vector as a PostgreSQL array literal (numbers only, so nothing needs quoting). */
const arrayLiteral = (vector: ReadonlyArray<number>) => `{${vector.join(",")}}`

const CREATED_US = "(extract(epoch FROM created_at) * 1000000)::bigint::text AS created_us"

export const AgentsPg = Layer.effect(
  Agents,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const events = yield* EventLog

    const findAgent = (accountId: string, agentId: string, lock = false) =>
      Effect.flatMap(
        lock
          ? sql<AgentRow>`SELECT * FROM agents WHERE id = ${agentId} AND account_id = ${accountId} FOR UPDATE`
          : sql<AgentRow>`SELECT * FROM agents WHERE id = ${agentId} AND account_id = ${accountId}`,
        ([row]) => (row === undefined ? Effect.fail(agentNotFound(agentId)) : Effect.succeed(row))
      )

    return Agents.of({
      create: (accountId, agent) =>
        Effect.gen(function*() {
          const [row] = yield* sql<AgentRow>`
            INSERT INTO agents (id, account_id, name, instructions, routing, embedding_model, conversation_cap)
            VALUES (${ids.make("agt")}, ${accountId}, ${agent.name}, ${agent.instructions},
                    ${JSON.stringify(agent.routing)}::jsonb, ${agent.embeddingModel}, ${agent.conversationCap})
            RETURNING *`
          yield* events.record({ type: "agent.created", accountId, data: { agent_id: row!.id } })
          return toAgent(row!)
        }).pipe(sql.withTransaction, Effect.orDie),

      get: (accountId, agentId) =>
        findAgent(accountId, agentId).pipe(Effect.map(toAgent), Effect.catchTag("SqlError", Effect.die)),

      list: (accountId, request) =>
        Effect.gen(function*() {
          const start = startOf(request)
          const rows = yield* sql<AgentRow & { created_us: string }>`
            SELECT *, ${sql.literal(CREATED_US)} FROM agents
            WHERE account_id = ${accountId}
              AND (created_at, id COLLATE "C") < (${start.at}::timestamptz, ${start.id} COLLATE "C")
            ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT ${request.limit + 1}`
          return pageFromRows(rows, request, toAgent)
        }).pipe(Effect.orDie),

      remove: (accountId, agentId) =>
        Effect.gen(function*() {
          const [row] = yield* sql<AgentRow>`DELETE FROM agents WHERE id = ${agentId} AND account_id = ${accountId} RETURNING *`
          if (row === undefined) return yield* Effect.fail(agentNotFound(agentId))
          yield* events.record({ type: "agent.deleted", accountId, data: { agent_id: agentId } })
          return toAgent(row)
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die)),

      addDocument: (accountId, agentId, document, chunks) =>
        Effect.gen(function*() {
          // Locked, so a deletion of the agent waits for the document, or the document finds no agent.
          yield* findAgent(accountId, agentId, true)
          const documentId = ids.make("doc")
          const [row] = yield* sql<DocumentRow>`
            INSERT INTO agent_documents (id, agent_id, title, characters, chunk_count, receipt_id)
            VALUES (${documentId}, ${agentId}, ${document.title}, ${document.characters}, ${chunks.length}, ${document.receiptId})
            RETURNING *`
          for (const [ordinal, chunk] of chunks.entries()) {
            yield* sql`
              INSERT INTO agent_chunks (id, document_id, agent_id, ordinal, text, embedding)
              VALUES (${ids.make("chk")}, ${documentId}, ${agentId}, ${ordinal}, ${chunk.text}, ${arrayLiteral(chunk.embedding)}::real[])`
          }
          yield* sql`UPDATE agents SET document_count = document_count + 1 WHERE id = ${agentId}`
          yield* events.record({
            type: "agent.document_added",
            accountId,
            ...(document.receiptId === null ? {} : { receiptId: document.receiptId }),
            data: { agent_id: agentId, document_id: documentId, chunks: chunks.length }
          })
          return toDocument(row!)
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die)),

      listDocuments: (accountId, agentId, request) =>
        Effect.gen(function*() {
          yield* findAgent(accountId, agentId)
          const start = startOf(request)
          const rows = yield* sql<DocumentRow & { created_us: string }>`
            SELECT *, ${sql.literal(CREATED_US)} FROM agent_documents
            WHERE agent_id = ${agentId}
              AND (created_at, id COLLATE "C") < (${start.at}::timestamptz, ${start.id} COLLATE "C")
            ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT ${request.limit + 1}`
          return pageFromRows(rows, request, toDocument)
        }).pipe(Effect.catchTag("SqlError", Effect.die)),

      removeDocument: (accountId, agentId, documentId) =>
        Effect.gen(function*() {
          yield* findAgent(accountId, agentId, true)
          const [row] = yield* sql<DocumentRow>`
            DELETE FROM agent_documents WHERE id = ${documentId} AND agent_id = ${agentId} RETURNING *`
          if (row === undefined) return yield* Effect.fail(documentNotFound(documentId))
          yield* sql`UPDATE agents SET document_count = document_count - 1 WHERE id = ${agentId}`
          yield* events.record({ type: "agent.document_deleted", accountId, data: { agent_id: agentId, document_id: documentId } })
          return toDocument(row)
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
    })
  })
)
