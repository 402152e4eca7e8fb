/**
 * OpenTelemetry traces through @effect/opentelemetry when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (OTLP over HTTP, JSON, to
 * `<endpoint>/v1/traces`, batched): a request's span (Effect's HTTP server)
 * with the call's stages under it — `svc.admission`, `svc.route_plan`,
 * `svc.billing.hold`, `svc.upstream`, `svc.billing.settle` — and its SQL
 * statements. Unset, nothing is exported and no SDK is started.
 * `OTEL_SERVICE_NAME` names the service (default `svc`).
 */
import { NodeSdk } from "@effect/opentelemetry"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer } from "effect"
import { AppConfig } from "../../services/Config.ts"

export const TracingLive = Layer.unwrapEffect(
  Effect.map(AppConfig, ({ env }) => {
    const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT
    if (endpoint === undefined || endpoint === "") return Layer.empty
    return NodeSdk.layer(() => ({
      resource: { serviceName: env.OTEL_SERVICE_NAME || "svc" },
      spanProcessor: new BatchSpanProcessor(
        new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, "")}/v1/traces` }),
        { scheduledDelayMillis: 500 }
      )
    }))
  })
)
