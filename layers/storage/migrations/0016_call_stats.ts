/**
 * Monitoring's storage: one record per answered call of an account
 * (`call_records`), and per process the account's calls in minute and hour
 * buckets (`call_stats`, written whole by each process and added up when
 * read), so a window reads at most a few hundred rows a process.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE call_records (
      request_id text PRIMARY KEY,
      account_id text NOT NULL,
      key_id text,
      endpoint text NOT NULL,
      status integer NOT NULL,
      code text,
      latency_ms double precision NOT NULL,
      ttft_ms double precision,
      input_tokens integer NOT NULL,
      output_tokens integer NOT NULL,
      spend_usd numeric(38, 9) NOT NULL,
      ended_at timestamptz NOT NULL
    )`
  // Block-range index: the retention job finds old rows by time; appending costs next to nothing.
  yield* sql`CREATE INDEX call_records_ended ON call_records USING brin (ended_at)`
  yield* sql`
    CREATE TABLE call_stats (
      account_id text NOT NULL,
      granularity text NOT NULL CHECK (granularity IN ('minute', 'hour')),
      bucket timestamptz NOT NULL,
      instance text NOT NULL,
      requests integer NOT NULL,
      server_errors integer NOT NULL,
      errors jsonb NOT NULL,
      latency jsonb NOT NULL,
      ttft jsonb NOT NULL,
      input_tokens bigint NOT NULL,
      output_tokens bigint NOT NULL,
      spend_usd numeric(38, 9) NOT NULL,
      PRIMARY KEY (account_id, granularity, bucket, instance)
    )`
  yield* sql`CREATE INDEX call_stats_bucket ON call_stats USING brin (bucket)`
})
