/** Versioned schema migrations, run at start before anything serves. Same SQL on PostgreSQL 15 and PGlite. */
import { Migrator } from "@effect/sql"
import { Effect, Layer } from "effect"
import accountsKeysLedger from "./migrations/0001_accounts_keys_ledger.ts"
import reservationsReceipts from "./migrations/0002_reservations_receipts.ts"
import idempotencyKeys from "./migrations/0003_idempotency_keys.ts"

const migrate = Migrator.make({})({
  loader: Migrator.fromRecord({
    "0001_accounts_keys_ledger": accountsKeysLedger,
    "0002_reservations_receipts": reservationsReceipts,
    "0003_idempotency_keys": idempotencyKeys
  }),
  table: "svc_migrations"
})

export const MigrationsLive = Layer.effectDiscard(
  migrate.pipe(
    Effect.tap((applied) =>
      Effect.forEach(applied, ([id, name]) => Effect.logInfo(`migration ${id} ${name} applied`), { discard: true })
    ),
    Effect.orDie
  )
)
