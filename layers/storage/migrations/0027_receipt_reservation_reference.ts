/**
 * A receipt refers to its reservation without a foreign key, as its account
 * reference does since migration 0024. The check ran a locking query per
 * receipt and was ~8 µs of the ~38 µs PostgreSQL spends settling a call of a
 * hot account (docs/performance.md, item 104). The settlement statement is
 * the only writer of receipts, and it writes each one for a reservation it
 * closes or writes in the same statement (layers/billing/ledgerSettle.ts);
 * reservations are never deleted, which the trigger below now enforces; the
 * money invariants (test/support/invariants.ts) check the reference after
 * every billing test.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE receipts DROP CONSTRAINT receipts_id_fkey`
  yield* sql`
    CREATE FUNCTION reservations_kept() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'reservations are never deleted: their receipts refer to them';
    END
    $$`
  yield* sql`
    CREATE TRIGGER reservations_kept BEFORE DELETE OR TRUNCATE ON reservations
    FOR EACH STATEMENT EXECUTE FUNCTION reservations_kept()`
})
