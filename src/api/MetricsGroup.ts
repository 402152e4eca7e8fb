/**
 * `GET /metrics`: operational telemetry in the Prometheus text format, for
 * admin keys (a scraper sends the operator key as a bearer token).
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { documented } from "./operationDocs.ts"
import { AdminScope } from "./Security.ts"

export const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"

export class MetricsGroup extends HttpApiGroup.make("metrics")
  .add(
    HttpApiEndpoint.get("metrics", "/metrics")
      .addSuccess(HttpApiSchema.Text({ contentType: PROMETHEUS_TEXT }).annotations({ description: "Prometheus text format 0.0.4" }))
      .annotateContext(documented(
        "Get the metrics",
        "Requests, latency, upstream attempts, rate-limit refusals, holds open and circuit states of this process."
      ))
  )
  .annotate(OpenApi.Description, "Operational telemetry for Prometheus")
  .middleware(AdminScope)
{}
