/**
 * Billing: a reservation holds an estimate against the balance while a call
 * runs (with a lease, so a crashed process cannot strand it); a receipt is the
 * settled record of one billable call. The reservation id is the receipt id,
 * so the id can be announced before the call ends.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE reservations (
      id text PRIMARY KEY,
      account_id text NOT NULL REFERENCES accounts (id),
      request_id text NOT NULL,
      amount_usd numeric(38, 9) NOT NULL CHECK (amount_usd >= 0),
      status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'settled', 'released')),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      closed_at timestamptz
    )`
  yield* sql`CREATE INDEX reservations_open_expiry ON reservations (expires_at) WHERE status = 'open'`
  yield* sql`CREATE INDEX reservations_account ON reservations (account_id)`
  yield* sql`
    CREATE TABLE receipts (
      id text PRIMARY KEY REFERENCES reservations (id),
      account_id text NOT NULL REFERENCES accounts (id),
      request_id text NOT NULL,
      endpoint text NOT NULL,
      model text NOT NULL,
      tier text NOT NULL,
      privacy_class text NOT NULL,
      input_tokens integer NOT NULL CHECK (input_tokens >= 0),
      output_tokens integer NOT NULL CHECK (output_tokens >= 0),
      input_per_mtok_usd numeric(38, 9) NOT NULL,
      output_per_mtok_usd numeric(38, 9),
      upstream_usd numeric(38, 9) NOT NULL,
      margin_usd numeric(38, 9) NOT NULL,
      total_usd numeric(38, 9) NOT NULL CHECK (total_usd >= 0),
      estimated_usd numeric(38, 9) NOT NULL,
      reserved_at timestamptz NOT NULL,
      settled_at timestamptz NOT NULL DEFAULT now(),
      balance_after_usd numeric(38, 9) NOT NULL,
      attempts jsonb NOT NULL,
      provider_id text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      CHECK (upstream_usd + margin_usd = total_usd)
    )`
  yield* sql`CREATE INDEX receipts_account ON receipts (account_id, created_at, id)`
})
