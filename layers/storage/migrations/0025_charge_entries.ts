/**
 * A settled call's `charge` ledger entry is read from its receipt instead of
 * being stored beside it: its amount, reference, balance after and time are
 * the receipt's own columns, and nothing reads a charge entry on the request
 * path (credits are looked up by reference; those stay rows). So a billed
 * call writes one row and three index entries fewer (docs/performance.md,
 * item 61). `ledger` is every entry, stored or read from a receipt: the view
 * for SQL readers, reconciliation and backups' checks (an account's balance
 * is the sum of its `ledger`).
 *
 * A receipt whose charge entry is stored (written before this migration, or
 * by a process of the previous version during a rollout) is listed through
 * that row, never twice. A derived entry's id is the receipt's with `led_`.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE VIEW ledger AS
    SELECT id, account_id, kind, amount_usd, reference, balance_after_usd, created_at FROM ledger_entries
    UNION ALL
    SELECT 'led_' || substr(r.id, strpos(r.id, '_') + 1), r.account_id, 'charge', -r.total_usd, r.id, r.balance_after_usd,
           r.created_at
    FROM receipts r
    WHERE NOT EXISTS (
      SELECT FROM ledger_entries l WHERE l.account_id = r.account_id AND l.kind = 'charge' AND l.reference = r.id
    )`
})
