/** `GET /metrics`: this process's registry, as prom-client writes it. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Metrics } from "../../services/Metrics.ts"
import { Api } from "../api/Api.ts"

export const MetricsHandlers = HttpApiBuilder.group(Api, "metrics", (handlers) =>
  Effect.map(Metrics, (metrics) =>
    handlers.handle("metrics", () => Effect.map(metrics.exposition, (exposition) => exposition.text))))
