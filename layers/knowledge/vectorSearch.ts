/**
 * Vector ranking in the database where it can: pgvector. PGlite always has
 * it (the extension ships with the gateway); a PostgreSQL server may or may
 * not have it installed, so it is detected at start. With it, each chunk's
 * `embedding` (real[]) is mirrored into `embedding_vector` by a trigger, and
 * the agent's chunks are ranked by cosine distance in one statement. The
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
      yield* sql`ALTER TABLE agent_chunks ADD COLUMN IF NOT EXISTS embedding_vector vector`
      yield* sql.unsafe(`
        CREATE OR REPLACE FUNCTION agent_chunks_embedding_vector() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          NEW.embedding_vector := NEW.embedding::vector;
          RETURN NEW;
        END $$`)
      yield* sql`
        CREATE OR REPLACE TRIGGER agent_chunks_embedding_vector
        BEFORE INSERT OR UPDATE OF embedding ON agent_chunks
        FOR EACH ROW EXECUTE FUNCTION agent_chunks_embedding_vector()`
      yield* sql`UPDATE agent_chunks SET embedding_vector = embedding::vector WHERE embedding_vector IS NULL`
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
