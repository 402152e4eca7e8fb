/**
 * Vector ranking in the database where it can: pgvector. PGlite always has
 * it (the extension ships with the gateway); a PostgreSQL server may or may
 * not have it installed, so it is detected at start. With it, each chunk's
 * `embedding` (real[]) is mirrored by a trigger into `agent_chunk_vectors`,
 * narrow rows that scan quickly, and the agent's chunks are ranked by cosine
 * distance in one statement. The
 * ranking is exact (no approximate index), the same as the cosine computed
 * in plain SQL that serves databases without pgvector (a test says so).
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Readies pgvector if the database offers it; whether vector ranking can run in SQL. */
export const prepareVectorSearch = (sql: SqlClient.SqlClient): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const [offered] = yield* sql<{ offered: boolean }>`
      SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS offered`
    if (offered?.offered !== true) return false
    yield* Effect.gen(function*() {
      // Processes starting together take turns (the same key as nothing else uses).
      yield* sql`SELECT pg_advisory_xact_lock(727274)`
      yield* sql`CREATE EXTENSION IF NOT EXISTS vector`
      // Narrow rows of their own: a chunk's row (text, words, array) is too wide to scan quickly.
      yield* sql`
        CREATE TABLE IF NOT EXISTS agent_chunk_vectors (
          chunk_id text PRIMARY KEY REFERENCES agent_chunks (id) ON DELETE CASCADE,
          agent_id text NOT NULL,
          dimensions integer NOT NULL,
          embedding vector NOT NULL
        )`
      yield* sql`CREATE INDEX IF NOT EXISTS agent_chunk_vectors_agent ON agent_chunk_vectors (agent_id, dimensions)`
      yield* sql.unsafe(`
        CREATE OR REPLACE FUNCTION agent_chunks_vector() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO agent_chunk_vectors (chunk_id, agent_id, dimensions, embedding)
          VALUES (NEW.id, NEW.agent_id, cardinality(NEW.embedding), NEW.embedding::vector)
          ON CONFLICT (chunk_id) DO UPDATE SET embedding = EXCLUDED.embedding, dimensions = EXCLUDED.dimensions;
          RETURN NULL;
        END $$`)
      yield* sql`
        CREATE OR REPLACE TRIGGER agent_chunks_vector
        AFTER INSERT OR UPDATE OF embedding ON agent_chunks
        FOR EACH ROW EXECUTE FUNCTION agent_chunks_vector()`
      yield* sql`
        INSERT INTO agent_chunk_vectors (chunk_id, agent_id, dimensions, embedding)
        SELECT c.id, c.agent_id, cardinality(c.embedding), c.embedding::vector
        FROM agent_chunks c LEFT JOIN agent_chunk_vectors v ON v.chunk_id = c.id
        WHERE v.chunk_id IS NULL`
    }).pipe(sql.withTransaction)
    return true
  }).pipe(
    // A server that offers pgvector but will not let us create it (privileges): the plain SQL ranking serves.
    Effect.catchAll((error) =>
      Effect.as(Effect.logWarning("pgvector is offered but could not be set up; ranking vectors in plain SQL", error), false)
    )
  )

/** The pgvector literal of an embedding. */
export const vectorLiteral = (embedding: ReadonlyArray<number>) => `[${embedding.join(",")}]`

/** The PostgreSQL array literal of an embedding, as double precision. */
export const toFloat8Array = (embedding: ReadonlyArray<number>) => `{${embedding.join(",")}}`
