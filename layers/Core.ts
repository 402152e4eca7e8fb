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
import { IdsLive } from "./IdsLive.ts"
import { MigrationsLive } from "./Migrations.ts"
import { ProviderRegistryLive } from "./ProviderRegistryLive.ts"

const Storage = MigrationsLive.pipe(Layer.provideMerge(DatabaseLive))

const Ledger = Layer.mergeAll(AccountsPg, ApiKeysPg).pipe(
  Layer.provideMerge(EventLogPg),
  Layer.provideMerge(Storage)
)

const Catalogue = CatalogueLive.pipe(
  Layer.provide(Plugins),
  Layer.provide(ProviderRegistryLive)
)

const Chat = ChatGatewayLive.pipe(Layer.provideMerge(Catalogue))

// The catalogue is built first: a config mistake it finds stops the start before the database opens.
export const Core = Ledger.pipe(Layer.provideMerge(Chat), Layer.provideMerge(IdsLive))
