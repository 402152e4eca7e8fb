/**
 * Agents and their knowledge: an agent per account with its instructions and
 * routing preset; documents; and chunks with their full-text vector (English
 * stemming, kept by PostgreSQL itself) and their embedding. Deleting an agent
 * or a document deletes its chunks. Lists are newest first by (created_at, id).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE agents (
      id text PRIMARY KEY,
      account_id text NOT NULL REFERENCES accounts (id),
      name text NOT NULL,
      instructions text NOT NULL,
      routing jsonb NOT NULL,
      embedding_model text NOT NULL,
      conversation_cap integer NOT NULL CHECK (conversation_cap > 0),
      conversation_count integer NOT NULL DEFAULT 0,
      document_count integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX agents_account ON agents (account_id, created_at, id COLLATE "C")`
  yield* sql`
    CREATE TABLE agent_documents (
      id text PRIMARY KEY,
      agent_id text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
      title text NOT NULL,
      characters integer NOT NULL,
      chunk_count integer NOT NULL,
      receipt_id text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX agent_documents_agent ON agent_documents (agent_id, created_at, id COLLATE "C")`
  yield* sql`
    CREATE TABLE agent_chunks (
      id text PRIMARY KEY,
      document_id text NOT NULL REFERENCES agent_documents (id) ON DELETE CASCADE,
      agent_id text NOT NULL,
      ordinal integer NOT NULL,
      text text NOT NULL,
      search tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
      embedding real[] NOT NULL
    )`
  yield* sql`CREATE INDEX agent_chunks_agent ON agent_chunks (agent_id)`
  yield* sql`CREATE INDEX agent_chunks_search ON agent_chunks USING gin (search)`
})
