/** Accounts, API keys, the credit ledger and the event log. Money columns are exact decimals. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE accounts (
      id text PRIMARY KEY,
      name text NOT NULL,
      balance_usd numeric(38, 9) NOT NULL DEFAULT 0,
      reserved_usd numeric(38, 9) NOT NULL DEFAULT 0 CHECK (reserved_usd >= 0),
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      account_id text NOT NULL REFERENCES accounts (id),
      name text,
      hint text NOT NULL,
      secret_sha256 bytea NOT NULL UNIQUE,
      scopes text[] NOT NULL,
      rpm integer,
      tpm integer,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX api_keys_account ON api_keys (account_id)`
  yield* sql`
    CREATE TABLE ledger_entries (
      id text PRIMARY KEY,
      account_id text NOT NULL REFERENCES accounts (id),
      kind text NOT NULL CHECK (kind IN ('credit', 'charge')),
      amount_usd numeric(38, 9) NOT NULL,
      reference text,
      balance_after_usd numeric(38, 9) NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (account_id, kind, reference)
    )`
  yield* sql`CREATE INDEX ledger_entries_account ON ledger_entries (account_id, created_at, id)`
  yield* sql`
    CREATE TABLE events (
      id text PRIMARY KEY,
      type text NOT NULL,
      account_id text,
      request_id text,
      receipt_id text,
      data jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX events_account ON events (account_id, created_at, id)`
})
