/**
 * `GET /v1/monitoring?window=`: an account's request volume, errors by code,
 * latency and time to first byte percentiles, tokens, spend, payment health
 * and provider health for one of the contract's windows.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Wire } from "../../services/ApiError.ts"
import { WINDOWS } from "../../services/Monitoring.ts"
import { AccountSelector } from "./monitoringParams.ts"
import { documented } from "./operationDocs.ts"
import { ProvidersHealth } from "./Records.ts"
import { MonitoringScope } from "./Security.ts"

const WINDOW_NAMES = Object.keys(WINDOWS) as Array<keyof typeof WINDOWS>

const Percentiles = Schema.Struct({
  p50: Schema.NullOr(Schema.Number),
  p95: Schema.NullOr(Schema.Number),
  p99: Schema.NullOr(Schema.Number)
}).annotations({ description: "Milliseconds, within 19% of the exact value (log-scale histograms); null with no calls" })

export const MonitoringRecord = Schema.Struct({
  object: Schema.Literal("monitoring"),
  account_id: Schema.String,
  window: Schema.Literal(...WINDOW_NAMES),
  from: Schema.String.annotations({ description: "Start of the window; its oldest bucket (a minute, or an hour from 24h) is counted whole" }),
  to: Schema.String,
  requests: Schema.Int.annotations({ description: "Answered requests of the account's keys" }),
  requests_per_minute: Schema.Number,
  error_rate: Schema.NullOr(Schema.Number).annotations({ description: "Share of answers that were not 2xx; null with no requests" }),
  server_error_rate: Schema.NullOr(Schema.Number).annotations({ description: "Share of 5xx answers" }),
  errors_by_code: Schema.Record({ key: Schema.String, value: Schema.Int }),
  latency_ms: Percentiles,
  ttft_ms: Percentiles.annotations({ description: "Streams: time to the first byte of the answer, in milliseconds" }),
  tokens: Schema.Struct({ input: Schema.Int, output: Schema.Int }),
  spend_usd: Schema.String,
  payment: Schema.Struct({
    balance_usd: Schema.String,
    held_usd: Schema.String,
    available_usd: Schema.String,
    burn_rate_usd_per_hour: Schema.String,
    runway_hours: Schema.NullOr(Schema.Number).annotations({ description: "null when nothing was spent in the window" }),
    status: Schema.Literal("ok", "low", "exhausted").annotations({
      description: "exhausted: nothing available; low: under 24 hours of runway at the window's burn rate"
    })
  }),
  series: Schema.Array(Schema.Struct({
    at: Schema.String.annotations({ description: "The bucket's start" }),
    requests: Schema.Int,
    errors: Schema.Int,
    input_tokens: Schema.Int,
    output_tokens: Schema.Int,
    spend_usd: Schema.String,
    p95_latency_ms: Schema.NullOr(Schema.Number)
  })).annotations({
    description: "One point per minute (windows up to 6h) or hour, oldest first, empty buckets included: for charts"
  }),
  providers: ProvidersHealth
}).annotations({ identifier: "Monitoring", description: "An account's calls, spend and health over a window" })

export const MonitoringParams = Schema.Struct({
  accountId: Schema.optional(AccountSelector),
  window: Schema.optional(Schema.Literal(...WINDOW_NAMES).annotations({
    message: () => `must be one of ${WINDOW_NAMES.join(", ")}`,
    description: "Default 1h"
  }))
})

export class MonitoringGroup extends HttpApiGroup.make("monitoring")
  .add(
    HttpApiEndpoint.get("getMonitoring", "/v1/monitoring")
      .setUrlParams(MonitoringParams)
      .addSuccess(MonitoringRecord)
      .addError(Wire.Forbidden)
      .annotateContext(documented(
        "Get the monitoring summary",
        "Request volume, errors by code, latency, spend, payment health and provider health over a window, " +
          "the same from every gateway process."
      ))
  )
  .annotate(OpenApi.Description, "The account's monitoring summary")
  .middleware(MonitoringScope)
{}
