/** `GET /v1/monitoring`: the selected account's summary and the provider health the key may see. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { formatUsd } from "../../services/Money.ts"
import { Monitoring } from "../../services/Monitoring.ts"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { isAdmin, selectAccount } from "./accountSelector.ts"
import { rate, tenths } from "./figures.ts"
import { providersHealth } from "./providerHealth.ts"

const percentiles = (of: { p50: number | undefined; p95: number | undefined; p99: number | undefined }) => ({
  p50: tenths(of.p50),
  p95: tenths(of.p95),
  p99: tenths(of.p99)
})

export const MonitoringHandlers = HttpApiBuilder.group(Api, "monitoring", (handlers) =>
  Effect.gen(function*() {
    const monitoring = yield* Monitoring
    const context = yield* Effect.context<Effect.Effect.Context<ReturnType<typeof providersHealth>>>()
    return handlers.handle("getMonitoring", ({ urlParams }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const accountId = yield* selectAccount(principal, urlParams.accountId)
        const summary = yield* monitoring.summary(accountId, urlParams.window ?? "1h")
        const providers = yield* Effect.provide(providersHealth(isAdmin(principal)), context)
        const { calls, payment } = summary
        const errors = Object.values(calls.errorsByCode).reduce((total, count) => total + count, 0)
        const minutes = (summary.to.getTime() - summary.from.getTime()) / 60_000
        return {
          object: "monitoring" as const,
          account_id: accountId,
          window: summary.window,
          from: summary.from.toISOString(),
          to: summary.to.toISOString(),
          requests: calls.requests,
          requests_per_minute: Math.round((calls.requests / minutes) * 1000) / 1000,
          error_rate: rate(errors, calls.requests),
          server_error_rate: rate(calls.serverErrors, calls.requests),
          errors_by_code: calls.errorsByCode,
          latency_ms: percentiles(calls.latencyMs),
          ttft_ms: percentiles(calls.ttftMs),
          tokens: { input: calls.inputTokens, output: calls.outputTokens },
          spend_usd: formatUsd(calls.spend),
          payment: {
            balance_usd: formatUsd(payment.balance),
            held_usd: formatUsd(payment.held),
            available_usd: formatUsd(payment.available),
            burn_rate_usd_per_hour: formatUsd(payment.burnPerHour),
            runway_hours: payment.runwayHours === undefined ? null : Math.round(payment.runwayHours * 100) / 100,
            status: payment.status
          },
          series: calls.series.map((point) => ({
            at: new Date(point.at).toISOString(),
            requests: point.requests,
            errors: point.errors,
            input_tokens: point.inputTokens,
            output_tokens: point.outputTokens,
            spend_usd: formatUsd(point.spend),
            p95_latency_ms: tenths(point.p95LatencyMs)
          })),
          providers
        }
      }))
  }))
