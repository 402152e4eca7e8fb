/**
 * `npm start` / `node dist/main.js`: reads the config, opens and migrates the
 * database (a line per step), makes sure there is an operator key, and serves
 * until SIGTERM or SIGINT, then drains (src/Server.ts) and exits 0. Anything
 * that stops the start is one line on stderr and exit code 1: a bad config
 * names its field, a busy port or bad address says what to change; an
 * unreachable database is waited for, one line per retry (Database.ts).
 * On PostgreSQL it runs one such gateway per core (src/start/workers.ts).
 */
import { HttpServer } from "@effect/platform"
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, RuntimeFlags, RuntimeFlagsPatch } from "effect"
import { ConfigChecks, Core } from "../layers/Core.ts"
import { loadConfig } from "../layers/platform/ConfigLive.ts"
import { AppConfig } from "../services/Config.ts"
import { HttpLive } from "./Server.ts"
import { listenFailureLine, type StartFailure, startFailureLine } from "./start/failureLines.ts"
import { logFormat } from "./start/logFormat.ts"
import { announceOperatorKey } from "./start/operatorKey.ts"
import { isWorker, superviseWorkers } from "./start/workers.ts"

const announceListening = Effect.flatMap(HttpServer.HttpServer, ({ address }) =>
  Effect.logInfo(
    address._tag === "TcpAddress"
      ? `svc listening on http://${address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname}:${address.port}/v1`
      : `svc listening on ${address.path}`
  )
)

const exitWith = (line: string) => Console.error(line).pipe(Effect.zipRight(Effect.sync(() => process.exit(1))))
const stop = (error: StartFailure) => exitWith(startFailureLine(error))

const main = Effect.gen(function*() {
  const config = yield* loadConfig(process.env)
  if (config.workers > 1 && !isWorker()) {
    // A config mistake is told once, here, not by every worker.
    yield* Effect.scoped(Layer.build(ConfigChecks.pipe(Layer.provide(Layer.succeed(AppConfig, config)))))
    const code = yield* superviseWorkers(config.workers)
    return yield* Effect.sync(() => process.exit(code))
  }
  const App = Layer.effectDiscard(announceListening).pipe(
    Layer.provide(HttpLive),
    Layer.provide(Layer.effectDiscard(announceOperatorKey)),
    Layer.provide(Core),
    Layer.provide(Layer.succeed(AppConfig, config))
  )
  return yield* Layer.launch(App).pipe(
    Effect.catchTag("ServeError", (error) => exitWith(listenFailureLine(error, config.host, config.port)))
  )
})

main.pipe(
  Effect.catchTags({ ConfigInvalid: stop, DataDirInUse: stop, DatabaseNotReady: stop }),
  // Effect's own fiber metrics (counters as each fiber starts and ends, a histogram of its lifetime) cost
  // every fiber of every call, and nothing reads them: `GET /metrics` is prom-client's (docs/performance.md).
  Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.disable(RuntimeFlags.RuntimeMetrics)),
  Effect.provide(logFormat(process.env, process.stdout.isTTY === true)),
  // The log format's logger is the only one (src/start/logFormat.ts).
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
