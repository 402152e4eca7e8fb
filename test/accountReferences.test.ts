/**
 * A call's money rows refer to their account without a foreign key
 * (migration 0024), and a receipt to its reservation (0027): an account or a
 * reservation can no longer be deleted, and the money invariants, which every
 * billing test checks, see a row of an account that does not exist and a
 * receipt of no reservation.
 */
import { expect } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Accounts } from "../services/Accounts.ts"
import { Ledger } from "../services/Ledger.ts"
import { moneyViolations } from "./support/invariants.ts"
import { layer } from "./support/layer.ts"
import { billFor, usd } from "./support/ledgerContract.ts"
import { pgLedger } from "./support/moneyLayers.ts"

const Tested = pgLedger()

/** The invariants' violations, read through the layer's own connection. */
const violations = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.promise(() =>
    moneyViolations(<Row,>(text: string, params?: ReadonlyArray<unknown>) =>
      Effect.runPromise(sql.unsafe<Row & object>(text, params as Array<unknown>).pipe(Effect.orDie)) as Promise<ReadonlyArray<Row>>
    )
  ))

/** `table`'s row `id` is refused both ways it could go (its trigger's message), and is still there. */
const refusesDeletion = (table: "accounts" | "reservations", id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const statement of [sql`DELETE FROM ${sql(table)} WHERE id = ${id}`, sql`TRUNCATE ${sql(table)} CASCADE`]) {
      const failure = yield* Effect.flip(statement)
      expect(String(failure.cause)).toContain(`${table} are never deleted`)
    }
    const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)} WHERE id = ${id}`
    expect(row!.n).toBe(1)
  })

/** A call of a new account, reserved and settled, after which the invariants hold: its reservation. */
const settledCall = (name: string) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const account = yield* Effect.flatMap(Accounts, (accounts) => accounts.create({ name, credit: usd("1") }))
    const reservation = yield* ledger.reserve({ accountId: account.id, requestId: `req_${name}`, amount: usd("0.01") })
    yield* ledger.settle(reservation, billFor("0.004"))
    expect(yield* violations).toEqual([])
    return reservation
  })

layer(Tested, { timeout: "60 seconds" })("account references", (it) => {
  it.effect("an account cannot be deleted or truncated", () =>
    Effect.gen(function*() {
      const account = yield* Effect.flatMap(Accounts, (accounts) => accounts.create({ name: "kept", credit: usd("1") }))
      yield* refusesDeletion("accounts", account.id)
    }))

  it.effect("a reservation cannot be deleted or truncated", () =>
    Effect.gen(function*() {
      const account = yield* Effect.flatMap(Accounts, (accounts) => accounts.create({ name: "held", credit: usd("1") }))
      const reservation = yield* Effect.flatMap(Ledger, (ledger) =>
        ledger.reserve({ accountId: account.id, requestId: "req_kept", amount: usd("0.01") }))
      yield* refusesDeletion("reservations", reservation.id)
    }))

  it.effect("the invariants name a receipt of no reservation", () =>
    Effect.gen(function*() {
      const reservation = yield* settledCall("orphan")

      // No statement of the gateway writes a receipt but for the reservation it closes or writes.
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE receipts SET id = 'rcpt_orphan' WHERE id = ${reservation.id}`
      expect(yield* violations).toContain("receipt rcpt_orphan of no reservation")
      yield* sql`UPDATE receipts SET id = ${reservation.id} WHERE id = 'rcpt_orphan'`
      expect(yield* violations).toEqual([])
    }))

  it.effect("the invariants hold after a settlement, and name every row of an unknown account", () =>
    Effect.gen(function*() {
      const reservation = yield* settledCall("refs")

      // Rows no statement of the gateway writes: each refers to an account that does not exist.
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO reservations (id, account_id, request_id, amount_usd, status, expires_at)
                 VALUES ('rsv_orphan', 'acct_missing', 'req_orphan', 0, 'released', now())`
      yield* sql`INSERT INTO ledger_entries (id, account_id, kind, amount_usd, reference, balance_after_usd)
                 VALUES ('led_orphan', 'acct_missing', 'credit', 0, 'orphan', 0)`
      yield* sql`UPDATE receipts SET account_id = 'acct_missing' WHERE id = ${reservation.id}`
      const found = yield* violations
      expect(found).toContain("reservation rsv_orphan of an unknown account")
      expect(found).toContain("ledger entry led_orphan of an unknown account")
      expect(found).toContain(`receipt ${reservation.id} of an unknown account`)
      expect(found).toContain(`receipt ${reservation.id} of another account than its reservation`)
    }))
})
