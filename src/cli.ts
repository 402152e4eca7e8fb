/**
 * `npm run svc -- <command>` (or `node dist/cli.js`): the operator CLI
 * (src/cli/commands.ts) as a process, on the operator's share of the app's
 * services (layers/OperatorCore.ts) and its config. Any failure is one line
 * on stderr and exit code 1.
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { OperatorCore } from "../layers/OperatorCore.ts"
import { ConfigLive } from "../layers/platform/ConfigLive.ts"
import { runCli } from "./cli/commands.ts"

// Logs go to stderr, and only warnings and worse: stdout is the JSON record alone.
const Quiet = Layer.merge(
  Logger.replace(Logger.defaultLogger, Logger.prettyLogger({ stderr: true })),
  Logger.minimumLogLevel(LogLevel.Warning)
)

runCli(OperatorCore.pipe(Layer.provide(ConfigLive)))(process.argv).pipe(
  Effect.provide(Layer.merge(NodeContext.layer, Quiet)),
  NodeRuntime.runMain({ disableErrorReporting: true, disablePrettyLogger: true })
)
