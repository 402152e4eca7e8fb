/** Versioned schema migrations, run at start before anything serves. Same SQL on PostgreSQL 15 and PGlite. */
import { Migrator, SqlClient } from "@effect/sql"
import { AppConfig } from "../../services/Config.ts"
import { Effect, FiberRef, HashMap, Layer } from "effect"
import accountsKeysLedger from "./migrations/0001_accounts_keys_ledger.ts"
import reservationsReceipts from "./migrations/0002_reservations_receipts.ts"
import idempotencyKeys from "./migrations/0003_idempotency_keys.ts"
import deploymentHealth from "./migrations/0004_deployment_health.ts"
import receiptAttestation from "./migrations/0005_receipt_attestation.ts"
import promptKeys from "./migrations/0006_prompt_keys.ts"
import transcripts from "./migrations/0007_transcripts.ts"
import rateLimits from "./migrations/0008_rate_limits.ts"
import listOrder from "./migrations/0009_list_order.ts"
import operatorKey from "./migrations/0010_operator_key.ts"
import agents from "./migrations/0011_agents.ts"
import conversations from "./migrations/0012_conversations.ts"
import receiptLineItems from "./migrations/0013_receipt_line_items.ts"
import eventOrder from "./migrations/0014_event_order.ts"
import usage from "./migrations/0015_usage.ts"
import callStats from "./migrations/0016_call_stats.ts"
import retention from "./migrations/0017_retention.ts"
import reservationLookup from "./migrations/0018_reservation_lookup.ts"
import rateCount from "./migrations/0019_rate_count.ts"
import permitBatches from "./migrations/0020_permit_batches.ts"
import creditLeases from "./migrations/0021_credit_leases.ts"
import settlementEvents from "./migrations/0022_settlement_events.ts"
import receiptCallEvents from "./migrations/0023_receipt_call_events.ts"
import accountReferences from "./migrations/0024_account_references.ts"
import chargeEntries from "./migrations/0025_charge_entries.ts"
import eventTypeOrder from "./migrations/0026_event_type_order.ts"
import receiptReservationReference from "./migrations/0027_receipt_reservation_reference.ts"

const MIGRATIONS: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "0001_accounts_keys_ledger": accountsKeysLedger,
  "0002_reservations_receipts": reservationsReceipts,
  "0003_idempotency_keys": idempotencyKeys,
  "0004_deployment_health": deploymentHealth,
  "0005_receipt_attestation": receiptAttestation,
  "0006_prompt_keys": promptKeys,
  "0007_transcripts": transcripts,
  "0008_rate_limits": rateLimits,
  "0009_list_order": listOrder,
  "0010_operator_key": operatorKey,
  "0011_agents": agents,
  "0012_conversations": conversations,
  "0013_receipt_line_items": receiptLineItems,
  "0014_event_order": eventOrder,
  "0015_usage": usage,
  "0016_call_stats": callStats,
  "0017_retention": retention,
  "0018_reservation_lookup": reservationLookup,
  "0019_rate_count": rateCount,
  "0020_permit_batches": permitBatches,
  "0021_credit_leases": creditLeases,
  "0022_settlement_events": settlementEvents,
  "0023_receipt_call_events": receiptCallEvents,
  "0024_account_references": accountReferences,
  "0025_charge_entries": chargeEntries,
  "0026_event_type_order": eventTypeOrder,
  "0027_receipt_reservation_reference": receiptReservationReference
}

/** The newest migration this build knows; `/readyz` is ready once the database has it. */
export const LATEST_MIGRATION = Object.keys(MIGRATIONS).length

/** Each migration announces itself as it starts: a first start on a slow disk is not silent. */
const announced = Object.fromEntries(
  Object.entries(MIGRATIONS).map(([key, effect], index) => [
    key,
    Effect.zipRight(
      // The Migrator's own annotations would repeat the name on two more lines.
      Effect.locally(Effect.logInfo(`applying migration ${index + 1}/${LATEST_MIGRATION} (${key})`), FiberRef.currentLogAnnotations, HashMap.empty()),
      effect
    )
  ])
)

const migrate = Migrator.make({})({ loader: Migrator.fromRecord(announced), table: "svc_migrations" })

/** Any fixed number: the key of the advisory lock that makes starting processes migrate one at a time. */
const MIGRATION_LOCK = 7_361_004

// The Migrator creates its table before taking its own lock, so processes starting together on a
// new PostgreSQL database could both try to create it. One connection of each process holds a
// session advisory lock while that process migrates, so they migrate one after another. (Not
// inside a transaction: the Migrator's existence check fails by design, which would abort it.)
const migrateAlone = Effect.gen(function*() {
  const { databaseUrl } = yield* AppConfig
  // The embedded database has one process and one connection: nothing to wait for.
  if (databaseUrl === undefined) return yield* migrate
  const sql = yield* SqlClient.SqlClient
  return yield* Effect.scoped(
    Effect.gen(function*() {
      const holder = yield* sql.reserve
      yield* holder.executeRaw("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK])
      yield* Effect.addFinalizer(() =>
        holder.executeRaw("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).pipe(Effect.ignore)
      )
      return yield* migrate
    })
  )
})

export const MigrationsLive = Layer.effectDiscard(
  migrateAlone.pipe(
    Effect.tap((applied) =>
      Effect.logInfo(applied.length === 0 ? "database schema is up to date" : `database schema updated (${applied.length} migrations applied)`)
    ),
    Effect.orDie
  )
)
