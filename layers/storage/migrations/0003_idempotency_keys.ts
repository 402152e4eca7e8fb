/** Responses of billable calls made with an `Idempotency-Key`, so a retry is answered without a second charge. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE idempotency_keys (
      account_id text NOT NULL REFERENCES accounts (id),
      key text NOT NULL,
      request_sha256 bytea NOT NULL,
      status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done')),
      response_status integer,
      response_headers jsonb,
      response_body text,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (account_id, key)
    )`
})
