/**
 * The references from a call's money rows to their account are kept by the
 * statements that write them, not checked row by row: a foreign key checks
 * each inserted row with a query of its own (locking the account row), which
 * was ~20% of what PostgreSQL spends settling a call (docs/performance.md,
 * item 60). Every row of `reservations`, `receipts` and `ledger_entries` is
 * written by a statement that finds its account first — the settlement and
 * the reservation update or lock the account row they write for, a call
 * held from a credit lease is written for the lease's account (whose row
 * references it), a credit updates it — and an
 * account is never deleted, which the trigger below now enforces. The money
 * invariants (test/support/invariants.ts) check every reference after every
 * billing test. A receipt's reference to its reservation stays a foreign key.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE reservations DROP CONSTRAINT reservations_account_id_fkey`
  yield* sql`ALTER TABLE receipts DROP CONSTRAINT receipts_account_id_fkey`
  yield* sql`ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_account_id_fkey`
  yield* sql`
    CREATE FUNCTION accounts_kept() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'accounts are never deleted: their reservations, receipts and ledger entries refer to them';
    END
    $$`
  yield* sql`
    CREATE TRIGGER accounts_kept BEFORE DELETE OR TRUNCATE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION accounts_kept()`
})
