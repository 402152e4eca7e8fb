/**
 * Kept prompt and completion text of standard-class chat calls, only when the
 * operator turns prompt storage on (services/Transcripts.ts). Deleted once
 * `expires_at` has passed.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE transcripts (
      receipt_id text PRIMARY KEY REFERENCES receipts (id),
      account_id text NOT NULL REFERENCES accounts (id),
      messages jsonb NOT NULL,
      completion jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX transcripts_expiry ON transcripts (expires_at)`
})
