/**
 * The money services (Accounts, ApiKeys, Idempotency, Ledger, EventLog and what it recorded) two
 * ways, for the contract suites that must pass on both: over a fresh real
 * database (PGlite, or PostgreSQL with DATABASE_URL), and in memory. Each
 * comes with a way to let a reservation's lease run out: real time on the
 * database (its clock decides), the TestClock in memory. `freshStorage`
 * serves other contract suites too (test/support/healthContract.ts).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, TestClock } from "effect"
import { AccountsMemory } from "../../layers/accounts/AccountsMemory.ts"
import { AccountsPg } from "../../layers/accounts/AccountsPg.ts"
import { ApiKeysMemory } from "../../layers/accounts/ApiKeysMemory.ts"
import { ApiKeysPg } from "../../layers/accounts/ApiKeysPg.ts"
import { IdempotencyMemory } from "../../layers/billing/IdempotencyMemory.ts"
import { IdempotencyPg } from "../../layers/billing/IdempotencyPg.ts"
import { LedgerMemory } from "../../layers/billing/LedgerMemory.ts"
import { LedgerPg } from "../../layers/billing/LedgerPg.ts"
import { EventLogMemory, type RecordedEvent, RecordedEvents } from "../../layers/events/EventLogMemory.ts"
import { EventLogPg } from "../../layers/events/EventLogPg.ts"
import { IdsLive } from "../../layers/platform/IdsLive.ts"
import { IdsTest } from "../../layers/platform/IdsTest.ts"
import { DatabaseLive } from "../../layers/storage/Database.ts"
import { MigrationsLive } from "../../layers/storage/Migrations.ts"
import type { Accounts } from "../../services/Accounts.ts"
import type { ApiKeys } from "../../services/ApiKeys.ts"
import type { EventLog, EventType } from "../../services/EventLog.ts"
import type { Idempotency } from "../../services/Idempotency.ts"
import type { Ledger } from "../../services/Ledger.ts"
import { freshDatabase } from "./database.ts"
import { testConfig } from "./testConfig.ts"

export const LEASE_SECONDS = 1

const configFile = { billing: { reservationLeaseSeconds: LEASE_SECONDS } }

/** The bootstrap operator key both implementations are configured with (`SVC_ADMIN_KEY`). */
export const ADMIN_KEY = "admin_contract_test_key_0123456789"

export interface MoneyLayers {
  readonly name: string
  readonly layer: Layer.Layer<Accounts | ApiKeys | Idempotency | Ledger | EventLog | RecordedEvents>
  /** Lets more than a lease pass, as the implementation's clock sees it. */
  readonly passLease: Effect.Effect<void>
}

/** `RecordedEvents` read back from the `events` table (nulls as absent fields, as they were recorded). */
const RecordedEventsPg = Layer.effect(
  RecordedEvents,
  Effect.map(SqlClient.SqlClient, (sql) =>
    RecordedEvents.of({
      all: sql<{
        id: string
        type: EventType
        account_id: string | null
        request_id: string | null
        receipt_id: string | null
        data: Record<string, unknown>
        created_at: Date
      }>`SELECT * FROM event_log ORDER BY created_at, id`.pipe(
        Effect.orDie,
        Effect.map((rows) =>
          rows.map((row): RecordedEvent => ({
            id: row.id,
            type: row.type,
            accountId: row.account_id,
            ...(row.request_id === null ? {} : { requestId: row.request_id }),
            ...(row.receipt_id === null ? {} : { receiptId: row.receipt_id }),
            data: row.data,
            createdAt: row.created_at
          }))
        )
      ),
      clear: sql`DELETE FROM events`.pipe(Effect.asVoid, Effect.orDie)
    }))
)

/** A migrated fresh database (and the `AppConfig` of `file` pointing at it) for as long as the layer lives, dropped after. */
export const freshStorage = (file: unknown, env: Record<string, string> = {}) => Layer.unwrapScoped(
  Effect.map(
    Effect.acquireRelease(Effect.promise(freshDatabase), (database) => Effect.promise(database.drop)),
    (database) =>
      MigrationsLive.pipe(Layer.provideMerge(DatabaseLive), Layer.provideMerge(testConfig(file, { ...database.env, ...env })))
  )
)

/** The PostgreSQL accounts, ledger and event log over a fresh database: for tests of their SQL. */
export const pgLedger = (file: unknown = {}) =>
  Layer.mergeAll(AccountsPg, LedgerPg).pipe(
    Layer.provideMerge(EventLogPg),
    Layer.provide(IdsLive),
    Layer.provideMerge(freshStorage(file)),
    Layer.orDie
  )

export const pgMoney: MoneyLayers = {
  name: "PostgreSQL",
  layer: Layer.mergeAll(AccountsPg, ApiKeysPg, IdempotencyPg, LedgerPg, RecordedEventsPg).pipe(
    Layer.provideMerge(EventLogPg),
    Layer.provide(IdsLive),
    Layer.provide(freshStorage(configFile, { SVC_ADMIN_KEY: ADMIN_KEY })),
    Layer.orDie
  ),
  passLease: Effect.promise(() => new Promise<void>((wake) => setTimeout(wake, LEASE_SECONDS * 1000 + 500)))
}

export const memoryMoney: MoneyLayers = {
  name: "memory",
  layer: Layer.mergeAll(AccountsMemory, ApiKeysMemory, IdempotencyMemory).pipe(
    Layer.provideMerge(LedgerMemory),
    Layer.provideMerge(EventLogMemory),
    Layer.provide(IdsTest),
    Layer.provide(testConfig(configFile, { SVC_ADMIN_KEY: ADMIN_KEY }))
  ),
  passLease: TestClock.adjust(`${LEASE_SECONDS * 1000 + 500} millis`)
}
