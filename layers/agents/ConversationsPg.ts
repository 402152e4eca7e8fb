/**
 * Conversations in PostgreSQL. Starting one takes a slot with a single
 * conditional update of the agent's count (`conversation_count <
 * conversation_cap`), in the transaction that inserts the conversation: two
 * processes racing for the last slot serialise on the agent's row, and the
 * second finds the count at the cap. Turns are numbered per conversation;
 * appends to one conversation take its row lock so numbers never collide.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { NotFound } from "../../services/ApiError.ts"
import { type Conversation, Conversations, type Turn } from "../../services/Conversations.ts"
import { Ids } from "../../services/Ids.ts"
import { quote } from "../../services/quote.ts"
import { agentNotFound, conversationCapReached } from "./agentRefusals.ts"

interface ConversationRow {
  readonly id: string
  readonly agent_id: string
  readonly created_at: Date
}

interface TurnRow {
  readonly id: string
  readonly role: "user" | "assistant"
  readonly content: string
  readonly receipt_id: string | null
  readonly created_at: Date
}

const toConversation = (row: ConversationRow): Conversation => ({ id: row.id, agentId: row.agent_id, createdAt: row.created_at })

const toTurn = (row: TurnRow): Turn => ({
  id: row.id,
  role: row.role,
  content: row.content,
  receiptId: row.receipt_id,
  createdAt: row.created_at
})

const conversationNotFound = (id: string) => new NotFound({ message: `No conversation ${quote(id)} of this agent.`, param: "conversation_id" })

export const ConversationsPg = Layer.effect(
  Conversations,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids

    return Conversations.of({
      start: (accountId, agentId) =>
        Effect.gen(function*() {
          const [slot] = yield* sql<{ id: string; conversation_cap: number }>`
            UPDATE agents SET conversation_count = conversation_count + 1
            WHERE id = ${agentId} AND account_id = ${accountId} AND conversation_count < conversation_cap
            RETURNING id, conversation_cap`
          if (slot === undefined) {
            const [agent] = yield* sql<{ conversation_cap: number }>`
              SELECT conversation_cap FROM agents WHERE id = ${agentId} AND account_id = ${accountId}`
            if (agent === undefined) return yield* Effect.fail(agentNotFound(agentId))
            return yield* Effect.fail(conversationCapReached(agent.conversation_cap))
          }
          const [row] = yield* sql<ConversationRow>`
            INSERT INTO agent_conversations (id, agent_id) VALUES (${ids.make("conv")}, ${agentId}) RETURNING *`
          return toConversation(row!)
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die)),

      get: (accountId, agentId, conversationId) =>
        sql<ConversationRow>`
          SELECT c.* FROM agent_conversations c JOIN agents a ON a.id = c.agent_id
          WHERE c.id = ${conversationId} AND c.agent_id = ${agentId} AND a.account_id = ${accountId}`.pipe(
          Effect.orDie,
          Effect.flatMap(([row]) => (row === undefined ? Effect.fail(conversationNotFound(conversationId)) : Effect.succeed(toConversation(row))))
        ),

      append: (conversationId, turns) =>
        Effect.gen(function*() {
          yield* sql`SELECT id FROM agent_conversations WHERE id = ${conversationId} FOR UPDATE`
          const [last] = yield* sql<{ seq: number | null }>`
            SELECT max(seq) AS seq FROM agent_turns WHERE conversation_id = ${conversationId}`
          const first = (last?.seq ?? -1) + 1
          const written: Array<Turn> = []
          for (const [index, turn] of turns.entries()) {
            const [row] = yield* sql<TurnRow>`
              INSERT INTO agent_turns (id, conversation_id, seq, role, content, receipt_id)
              VALUES (${ids.make("msg")}, ${conversationId}, ${first + index}, ${turn.role}, ${turn.content}, ${turn.receiptId ?? null})
              RETURNING *`
            written.push(toTurn(row!))
          }
          return written
        }).pipe(sql.withTransaction, Effect.orDie),

      discard: (conversationId) =>
        sql`
          WITH gone AS (
            DELETE FROM agent_conversations
            WHERE id = ${conversationId}
              AND NOT EXISTS (SELECT 1 FROM agent_turns WHERE conversation_id = ${conversationId})
            RETURNING agent_id
          )
          UPDATE agents SET conversation_count = conversation_count - 1 FROM gone WHERE agents.id = gone.agent_id`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),

      history: (conversationId, limit) =>
        sql<TurnRow>`
          SELECT * FROM (
            SELECT * FROM agent_turns WHERE conversation_id = ${conversationId} ORDER BY seq DESC LIMIT ${limit}
          ) recent ORDER BY seq`.pipe(Effect.orDie, Effect.map((rows) => rows.map(toTurn)))
    })
  })
)
