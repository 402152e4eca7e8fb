/**
 * An agent's conversations and their turns. The agent's row counts its
 * conversations (`agents.conversation_count`), so the cap is taken with one
 * conditional update: of processes racing for the last slot, one wins.
 * Deleting an agent deletes its conversations and their turns.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE agent_conversations (
      id text PRIMARY KEY,
      agent_id text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX agent_conversations_agent ON agent_conversations (agent_id, created_at, id COLLATE "C")`
  yield* sql`
    CREATE TABLE agent_turns (
      id text PRIMARY KEY,
      conversation_id text NOT NULL REFERENCES agent_conversations (id) ON DELETE CASCADE,
      seq integer NOT NULL,
      role text NOT NULL CHECK (role IN ('user', 'assistant')),
      content text NOT NULL,
      receipt_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (conversation_id, seq)
    )`
})
