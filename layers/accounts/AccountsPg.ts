/** Accounts and credits in PostgreSQL. Every balance change is a ledger entry in the same transaction. */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { type Account, Accounts, type LedgerEntry } from "../../services/Accounts.ts"
import { Conflict } from "../../services/ApiError.ts"
import { accountNotFound } from "./accountRefusals.ts"
import { EventLog } from "../../services/EventLog.ts"
import { Ids } from "../../services/Ids.ts"
import { formatUsd, type Nanos, fromNumericColumn } from "../../services/Money.ts"
import { quote } from "../../services/quote.ts"
import { pageFromRows, startOf } from "../storage/pageRows.ts"

interface AccountRow {
  readonly id: string
  readonly name: string
  readonly balance_usd: string
  readonly reserved_usd: string
  readonly created_at: Date
}

interface LedgerRow {
  readonly id: string
  readonly account_id: string
  readonly kind: "credit" | "charge"
  readonly amount_usd: string
  readonly reference: string | null
  readonly balance_after_usd: string
  readonly created_at: Date
}

const money = fromNumericColumn

const toAccount = (row: AccountRow): Account => ({
  id: row.id,
  name: row.name,
  balance: money(row.balance_usd),
  reserved: money(row.reserved_usd),
  createdAt: row.created_at
})

const toEntry = (row: LedgerRow): LedgerEntry => ({
  id: row.id,
  accountId: row.account_id,
  kind: row.kind,
  amount: money(row.amount_usd),
  reference: row.reference,
  balanceAfter: money(row.balance_after_usd),
  createdAt: row.created_at
})

export const AccountsPg = Layer.effect(
  Accounts,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const events = yield* EventLog

    const lockAccount = (id: string) =>
      sql<AccountRow>`SELECT * FROM accounts WHERE id = ${id} FOR UPDATE`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(accountNotFound(id)) : Effect.succeed(rows[0]!))
      )

    const credit = (accountId: string, amount: Nanos, reference: string) =>
      Effect.gen(function*() {
        const [updated] = yield* sql<{ balance_usd: string }>`
          UPDATE accounts SET balance_usd = balance_usd + ${formatUsd(amount)}::numeric
          WHERE id = ${accountId} RETURNING balance_usd`
        const [entry] = yield* sql<LedgerRow>`
          INSERT INTO ledger_entries (id, account_id, kind, amount_usd, reference, balance_after_usd)
          VALUES (${ids.make("led")}, ${accountId}, 'credit', ${formatUsd(amount)}::numeric, ${reference},
                  ${updated!.balance_usd}::numeric)
          RETURNING *`
        yield* events.record({
          type: "payment.credit_added",
          accountId,
          data: { ledger_entry_id: entry!.id, amount_usd: formatUsd(amount), reference }
        })
        return toEntry(entry!)
      }).pipe(Effect.orDie)

    return {
      create: ({ credit: initialCredit, name }) =>
        Effect.gen(function*() {
          const id = ids.make("acct")
          yield* sql`INSERT INTO accounts (id, name) VALUES (${id}, ${name})`
          yield* events.record({ type: "account.created", accountId: id, data: { name } })
          if (initialCredit !== undefined && initialCredit > 0n) yield* credit(id, initialCredit, "initial")
          const [row] = yield* sql<AccountRow>`SELECT * FROM accounts WHERE id = ${id}`
          return toAccount(row!)
        }).pipe(sql.withTransaction, Effect.orDie),

      get: (id) =>
        sql<AccountRow>`SELECT * FROM accounts WHERE id = ${id}`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(accountNotFound(id)) : Effect.succeed(toAccount(rows[0]!)))
        ),

      list: (request) => {
        const start = startOf(request)
        return sql<AccountRow & { created_us: string }>`
          SELECT *, (extract(epoch FROM created_at) * 1000000)::bigint::text AS created_us FROM accounts
          WHERE (created_at, id COLLATE "C") < (${start.at}::timestamptz, ${start.id} COLLATE "C")
          ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT ${request.limit + 1}`.pipe(
          Effect.orDie,
          Effect.map((rows) => pageFromRows(rows, request, toAccount))
        )
      },

      addCredit: (accountId, { amount, reference }) =>
        Effect.gen(function*() {
          // The row lock serialises credits of one account, so a reference is checked and used atomically.
          yield* lockAccount(accountId)
          const existing = yield* sql<LedgerRow>`
            SELECT * FROM ledger_entries
            WHERE account_id = ${accountId} AND kind = 'credit' AND reference = ${reference}`.pipe(Effect.orDie)
          if (existing.length > 0) {
            const entry = toEntry(existing[0]!)
            if (entry.amount === amount) return entry
            return yield* Effect.fail(
              new Conflict({
                message: `Reference "${quote(reference)}" was already used for a credit of ${formatUsd(entry.amount)} USD.`,
                param: "reference"
              })
            )
          }
          return yield* credit(accountId, amount, reference)
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
    }
  })
)
