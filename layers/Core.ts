/**
 * The gateway's services, assembled: storage (migrated before anything
 * uses it), accounts and keys, the plugins and the catalogue they serve,
 * deployment health, the chat and embeddings paths, and agents with their
 * knowledge; the database's status and the settlement journal. Needs only the `AppConfig`.
 */
import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import type { CallStats } from "../services/CallStats.ts"
import type { AppConfig } from "../services/Config.ts"
import type { Ledger } from "../services/Ledger.ts"
import { Plugins } from "../plugins/index.ts"
import { AttestationVerifierPlugins } from "../plugins/attestation/index.ts"
import { AccountsPg } from "./accounts/AccountsPg.ts"
import { AgentPresetsLive } from "./agents/AgentPresetsLive.ts"
import { AgentsPg } from "./agents/AgentsPg.ts"
import { AgentRunsLive } from "./agents/AgentRunsLive.ts"
import { ConversationsPg } from "./agents/ConversationsPg.ts"
import { KnowledgeLive } from "./knowledge/KnowledgeLive.ts"
import { RetrievalPg } from "./knowledge/RetrievalPg.ts"
import { ApiKeysPg } from "./accounts/ApiKeysPg.ts"
import { AttestationLive } from "./privacy/AttestationLive.ts"
import { AttestationVerifiersLive } from "./privacy/AttestationVerifiersLive.ts"
import { CatalogueLive } from "./catalogue/CatalogueLive.ts"
import { DatabaseLive } from "./storage/Database.ts"
import { DatabaseStatusLive } from "./storage/DatabaseStatusLive.ts"
import { Gateways } from "./gateway/Gateways.ts"
import { EventLogPg } from "./events/EventLogPg.ts"
import { CallStatsPg } from "./monitoring/CallStatsPg.ts"
import { MonitoringLive } from "./monitoring/MonitoringLive.ts"
import { RetentionJob } from "./monitoring/RetentionJob.ts"
import { MetricsLive } from "./telemetry/MetricsLive.ts"
import { UsagePg } from "./monitoring/UsagePg.ts"
import { HealthPg } from "./health/HealthPg.ts"
import { HealthReportPg } from "./health/HealthReportPg.ts"
import { IdempotencyPg } from "./billing/IdempotencyPg.ts"
import { IdsLive } from "./platform/IdsLive.ts"
import { LedgerPg } from "./billing/LedgerPg.ts"
import { MigrationsLive } from "./storage/Migrations.ts"
import { PricingLive } from "./billing/PricingLive.ts"
import { ReadinessPg } from "./storage/ReadinessPg.ts"
import { ProviderRegistryLive } from "./catalogue/ProviderRegistryLive.ts"
import { ReservationSweeper } from "./billing/ReservationSweeper.ts"
import { RateLimits } from "./admission/RateLimitStoreLive.ts"
import { SettlementJournalFile } from "./billing/SettlementJournalFile.ts"
import { RouterModesLive } from "./routing/RouterModesLive.ts"
import { SealedPromptsPg } from "./privacy/SealedPromptsPg.ts"
import { TranscriptsPg } from "./privacy/TranscriptsPg.ts"

const Storage = MigrationsLive.pipe(Layer.provideMerge(DatabaseLive))

/** Agents and their knowledge, on the embeddings path and the catalogue. */
const AgentServices = AgentRunsLive.pipe(
  Layer.provideMerge(Layer.mergeAll(KnowledgeLive, AgentPresetsLive, RetrievalPg, ConversationsPg)),
  Layer.provideMerge(AgentsPg)
)

/** The attestation verifiers, registered by their plugin Layers; read by the catalogue (at start) and `Attestation`. */
const Verifiers = AttestationVerifierPlugins.pipe(Layer.provideMerge(AttestationVerifiersLive))

/** Confidential runtimes' verdicts, from the verifier each attestation block's `kind` names. */
const Attestations = AttestationLive().pipe(Layer.provide(Verifiers))

const Catalogue = CatalogueLive.pipe(
  Layer.provide(Plugins),
  Layer.provide(ProviderRegistryLive),
  Layer.provide(Verifiers)
)

/**
 * Everything that judges the config beyond its schema (providers and their options, attestation
 * blocks, router-mode options), built before the database opens: a mistake stops the start there.
 */
export const ConfigChecks = Layer.mergeAll(Catalogue, RouterModesLive)

/** The services with a given ledger (the real one in `Core`, a no-op one in the billing benchmark) and call records. */
export const coreWith = <E, R>(
  ledger: Layer.Layer<Ledger, E, R>,
  callStats: Layer.Layer<CallStats, never, SqlClient.SqlClient | AppConfig> = CallStatsPg
) => {
  const Money = ReservationSweeper.pipe(
    // Settlements kept while the database was away: replayed at start, before the first sweep.
    Layer.provideMerge(SettlementJournalFile),
    Layer.provideMerge(
      Layer.mergeAll(AccountsPg, ApiKeysPg, ledger, IdempotencyPg, SealedPromptsPg, TranscriptsPg, RateLimits, ReadinessPg)
    ),
    Layer.provideMerge(EventLogPg),
    Layer.provideMerge(DatabaseStatusLive),
    Layer.provideMerge(Storage)
  )
  const gateway = Gateways.pipe(
    // Deployment health shared through the database: the router's breaker and the health report.
    Layer.provideMerge(Layer.mergeAll(HealthPg, HealthReportPg)),
    Layer.provideMerge(Money),
    Layer.provideMerge(Attestations),
    Layer.provideMerge(ConfigChecks),
    Layer.provideMerge(PricingLive),
    Layer.provideMerge(IdsLive),
    Layer.provideMerge(MetricsLive)
  )
  // Monitoring reads what the calls left: receipts, buckets, balances, health.
  const Observed = Layer.mergeAll(MonitoringLive, RetentionJob).pipe(Layer.provideMerge(Layer.mergeAll(UsagePg, callStats)))
  return Layer.mergeAll(AgentServices, Observed).pipe(Layer.provideMerge(gateway))
}

export const Core = coreWith(LedgerPg)
