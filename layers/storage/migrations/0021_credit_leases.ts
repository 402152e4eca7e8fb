/**
 * Credit a process has reserved from an account's available balance for its
 * next calls (layers/billing/creditLeases.ts): counted in the account's
 * `reserved_usd` like a reservation, and held from in process, so a call far
 * from the balance's end needs no statement before it is answered. A call
 * held from a lease gets its own reservation row when it is settled or
 * released. A lease whose process stopped renewing it is freed by the
 * reservation sweeper.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE credit_leases (
      id text PRIMARY KEY,
      account_id text NOT NULL REFERENCES accounts (id),
      amount_usd numeric(38, 9) NOT NULL CHECK (amount_usd >= 0),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX credit_leases_expiry ON credit_leases (expires_at)`
})
