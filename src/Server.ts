/**
 * The HTTP server: the API declaration implemented by its handlers, behind
 * the edge middleware (and CORS when configured), with `/openapi.json`, on
 * Node's http server, which drains its calls in flight when stopped.
 */
import { HttpApiBuilder, HttpMiddleware } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AppConfig } from "../services/Config.ts"
import { Ids } from "../services/Ids.ts"
import { Api } from "./api/Api.ts"
import { AdminHandlers } from "./handlers/Admin.ts"
import { AgentRunsHandlers } from "./handlers/AgentRuns.ts"
import { AgentsHandlers } from "./handlers/Agents.ts"
import { ChatHandlers } from "./handlers/Chat.ts"
import { EmbeddingsHandlers } from "./handlers/Embeddings.ts"
import { LogsHandlers } from "./handlers/Logs.ts"
import { MonitoringHandlers } from "./handlers/Monitoring.ts"
import { MetricsHandlers } from "./handlers/Metrics.ts"
import { KeyHandlers } from "./handlers/Key.ts"
import { ModelsHandlers } from "./handlers/Models.ts"
import { PrivacyHandlers } from "./handlers/Privacy.ts"
import { ProbesHandlers } from "./handlers/Probes.ts"
import { ProvidersHandlers } from "./handlers/Providers.ts"
import { ReceiptsHandlers } from "./handlers/Receipts.ts"
import { UsageHandlers } from "./handlers/Usage.ts"
import { ResponsesHandlers } from "./handlers/Responses.ts"
import { answerClientErrors, requestTimeouts } from "./http/clientErrors.ts"
import { corsFor } from "./http/cors.ts"
import { DashboardLive } from "./http/dashboard.ts"
import { drainOnStop, settledOnStop } from "./http/drain.ts"
import { edgeMiddleware } from "./http/Edge.ts"
import { ChatLane } from "./http/lane/chatLane.ts"
import { LaneServer, ServerWithLane } from "./http/lane/laneServer.ts"
import { SecurityLive } from "./http/SecurityLive.ts"
import { TracingLive } from "../layers/telemetry/TracingLive.ts"

const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([
    ChatHandlers,
    ResponsesHandlers,
    EmbeddingsHandlers,
    AgentsHandlers,
    AgentRunsHandlers,
    ModelsHandlers,
    ReceiptsHandlers,
    LogsHandlers,
    UsageHandlers,
    MonitoringHandlers,
    MetricsHandlers,
    KeyHandlers,
    ProvidersHandlers,
    PrivacyHandlers,
    AdminHandlers,
    ProbesHandlers
  ]),
  Layer.provide(SecurityLive)
)

const Edge = Layer.unwrapEffect(Effect.map(AppConfig, (config) => edgeMiddleware(config.file.limits)))

const Cors = Layer.unwrapEffect(Effect.map(AppConfig, (config) => corsFor(config.file.cors.origins)))

const Listener = Layer.unwrapEffect(
  Effect.map(
    Effect.all([AppConfig, Ids]),
    ([{ file, host, port }, ids]) => {
      const server = new LaneServer(requestTimeouts(file.limits.requestTimeoutMs))
      answerClientErrors(server, () => ids.make("req"))
      // Built after the server's own layer, so its finalizer runs first, as the server starts closing.
      return Layer.provideMerge(
        drainOnStop(server, file.shutdown.drainSeconds, () => ids.make("req")),
        Layer.merge(NodeHttpServer.layer(() => server, { host, port }), Layer.succeed(ServerWithLane, server))
      )
    }
  )
)

/** Serves the API; needs the core services and the config. */
/** Per-request tracing spans cost more than the rest of the edge: only while traces are exported (TracingLive). */
const Served = Layer.unwrapEffect(Effect.map(AppConfig, ({ env }) =>
  env.OTEL_EXPORTER_OTLP_ENDPOINT
    ? HttpApiBuilder.serve()
    : HttpApiBuilder.serve().pipe(HttpMiddleware.withTracerDisabledWhen(() => true))
))

export const HttpLive = Layer.merge(Served, ChatLane).pipe(
  Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
  Layer.provide(DashboardLive),
  Layer.provide(Edge),
  Layer.provide(Cors),
  Layer.provide(ApiLive),
  Layer.provideMerge(Listener),
  Layer.provide(settledOnStop),
  Layer.provide(TracingLive)
)
