/**
 * What the operator CLI needs and no more: the migrated database with
 * accounts, keys, the ledger's credits, agents and the prompt-sealing keys. Without
 * the gateway's plugins, catalogue and tokenizer, the CLI's bundle is small
 * and a command starts in about a second. Needs only the `AppConfig`.
 */
import { Layer } from "effect"
import { AccountsPg } from "./accounts/AccountsPg.ts"
import { AgentsPg } from "./agents/AgentsPg.ts"
import { ApiKeysPg } from "./accounts/ApiKeysPg.ts"
import { EventLogPg } from "./events/EventLogPg.ts"
import { IdsLive } from "./platform/IdsLive.ts"
import { SealedPromptsPg } from "./privacy/SealedPromptsPg.ts"
import { DatabaseLive } from "./storage/Database.ts"
import { MigrationsLive } from "./storage/Migrations.ts"

export const OperatorCore = Layer.mergeAll(AccountsPg, ApiKeysPg, SealedPromptsPg, AgentsPg).pipe(
  Layer.provideMerge(EventLogPg),
  Layer.provideMerge(MigrationsLive.pipe(Layer.provideMerge(DatabaseLive))),
  Layer.provideMerge(IdsLive)
)
