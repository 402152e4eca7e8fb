/**
 * `npm start`: reads the config, migrates the database and serves until
 * stopped. A bad config exits non-zero with one line naming the field; an
 * unreachable database is waited for, one line per retry (Database.ts).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer } from "effect"
import { ConfigLive } from "../layers/platform/ConfigLive.ts"
import { Core } from "../layers/Core.ts"
import { AppConfig } from "../services/Config.ts"
import { HttpLive } from "./Server.ts"
import { startFailureLine } from "./startFailure.ts"

const announce = Layer.effectDiscard(
  Effect.flatMap(AppConfig, ({ host, port }) => Effect.logInfo(`svc listening on http://${host}:${port}/v1`))
)

const App = Layer.mergeAll(HttpLive, announce).pipe(Layer.provide(Core), Layer.provide(ConfigLive))

const stop = (error: Parameters<typeof startFailureLine>[0]) =>
  Console.error(startFailureLine(error)).pipe(Effect.zipRight(Effect.sync(() => process.exit(1))))

Layer.launch(App).pipe(
  Effect.catchTags({
    ConfigInvalid: stop,
    DataDirInUse: stop,
    DatabaseNotReady: stop
  }),
  NodeRuntime.runMain
)
