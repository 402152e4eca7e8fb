/**
 * The gateway's services, assembled: storage (migrated before anything
 * uses it), accounts and keys, the plugins and the catalogue they serve, and
 * the chat path. Needs only the `AppConfig`.
 */
import { Layer } from "effect"
import { Plugins } from "../plugins/index.ts"
import { AccountsPg } from "./AccountsPg.ts"
import { ApiKeysPg } from "./ApiKeysPg.ts"
import { CatalogueLive } from "./CatalogueLive.ts"
import { ChatGatewayLive } from "./ChatGatewayLive.ts"
import { DatabaseLive } from "./Database.ts"
import { EventLogPg } from "./EventLogPg.ts"
import { IdempotencyPg } from "./IdempotencyPg.ts"
import { IdsLive } from "./IdsLive.ts"
import { LedgerPg } from "./LedgerPg.ts"
import { MigrationsLive } from "./Migrations.ts"
import { PricingLive } from "./PricingLive.ts"
import { ProviderRegistryLive } from "./ProviderRegistryLive.ts"
import { ReservationSweeper } from "./ReservationSweeper.ts"

const Storage = MigrationsLive.pipe(Layer.provideMerge(DatabaseLive))

const Money = ReservationSweeper.pipe(
  Layer.provideMerge(Layer.mergeAll(AccountsPg, ApiKeysPg, LedgerPg, IdempotencyPg)),
  Layer.provideMerge(EventLogPg),
  Layer.provideMerge(Storage)
)

const Catalogue = CatalogueLive.pipe(
  Layer.provide(Plugins),
  Layer.provide(ProviderRegistryLive)
)

export const Core = ChatGatewayLive.pipe(
  Layer.provideMerge(Money),
  // Built first: a config mistake the catalogue finds stops the start before the database opens.
  Layer.provideMerge(Catalogue),
  Layer.provideMerge(PricingLive),
  Layer.provideMerge(IdsLive)
)
