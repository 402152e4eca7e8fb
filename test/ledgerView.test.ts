/**
 * The `ledger` view (migration 0025): a settled call's `charge` entry is read
 * from its receipt, once, beside the stored credit entries; a receipt whose
 * charge entry is stored (before the migration, or a previous version's
 * during a rollout) is listed through that row instead; an account's balance
 * is the sum of its ledger.
 */
import { expect } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Accounts } from "../services/Accounts.ts"
import { Ledger } from "../services/Ledger.ts"
import { formatUsd } from "../services/Money.ts"
import { layer } from "./support/layer.ts"
import { billFor, usd } from "./support/ledgerContract.ts"
import { pgLedger } from "./support/moneyLayers.ts"

const Tested = pgLedger()

interface EntryRow {
  readonly id: string
  readonly kind: string
  readonly amount_usd: string
  readonly reference: string | null
  readonly balance_after_usd: string
}

layer(Tested, { timeout: "60 seconds" })("the ledger view", (it) => {
  it.effect("lists each receipt's charge once, read from it or from its stored row; the balance is the ledger's sum", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const sql = yield* SqlClient.SqlClient
      const account = yield* Effect.flatMap(Accounts, (accounts) => accounts.create({ name: "ledger", credit: usd("1") }))
      const reservations = yield* Effect.forEach(
        ["req_1", "req_2", "req_3"],
        (requestId) => ledger.reserve({ accountId: account.id, requestId, amount: usd("0.01") })
      )
      const receipts = yield* Effect.forEach(reservations, (reservation, i) => ledger.settle(reservation, billFor(`0.00${i + 1}`)))

      const stored = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = ${account.id} AND kind = 'charge'`
      expect(stored[0]!.n).toBe(0)
      const entries = () =>
        sql<EntryRow>`
          SELECT id, kind, amount_usd::text, reference, balance_after_usd::text FROM ledger
          WHERE account_id = ${account.id} ORDER BY created_at, id`
      const charges = (yield* entries()).filter((entry) => entry.kind === "charge")
      expect(charges).toEqual(receipts.map((receipt) => ({
        id: `led_${receipt.id.slice(receipt.id.indexOf("_") + 1)}`,
        kind: "charge",
        amount_usd: formatUsd(-receipt.cost.total),
        reference: receipt.id,
        balance_after_usd: formatUsd(receipt.balanceAfter)
      })))
      const balance = () =>
        sql<{ balance: string; ledger: string }>`
          SELECT balance_usd::text AS balance, (SELECT sum(amount_usd) FROM ledger WHERE account_id = a.id)::text AS ledger
          FROM accounts a WHERE id = ${account.id}`
      const [before] = yield* balance()
      expect(before!.ledger).toBe(before!.balance)

      // A previous version's process stores the charge entry of the receipt it writes.
      const old = receipts[1]!
      yield* sql`
        INSERT INTO ledger_entries (id, account_id, kind, amount_usd, reference, balance_after_usd)
        VALUES ('led_stored', ${account.id}, 'charge', ${formatUsd(-old.cost.total)}::numeric, ${old.id},
                ${formatUsd(old.balanceAfter)}::numeric)`
      const after = (yield* entries()).filter((entry) => entry.reference === old.id)
      expect(after.map((entry) => entry.id)).toEqual(["led_stored"])
      const [sums] = yield* balance()
      expect(sums!.ledger).toBe(sums!.balance)
    }))
})
