/**
 * Operational telemetry in the Prometheus text format (`GET /metrics`,
 * admin keys): requests by route, method, status, model and privacy class
 * with their latency; upstream attempts by deployment and outcome; rate-limit
 * refusals; and, read when scraped, holds open and circuit states. Stages
 * that report take it with `Effect.serviceOption`, so a stage tested on its
 * own needs none.
 */
import { Context, type Effect } from "effect"

export interface RequestLabels {
  /** The API route's template (`/v1/receipts/:id`), `unmatched` for any other path. */
  readonly route: string
  readonly method: string
  readonly status: number
  /** The model that served the call, `none` if none did. */
  readonly model: string
  readonly privacyClass: string
}

export type GaugeReading = ReadonlyArray<readonly [labels: Readonly<Record<string, string>>, value: number]>

export class Metrics extends Context.Tag("svc/Metrics")<Metrics, {
  readonly requestEnded: (labels: RequestLabels, seconds: number) => void
  readonly upstreamAttempt: (deployment: string, outcome: string) => void
  readonly rateLimitRefused: (limit: string) => void
  /** A gauge whose values are read when the metrics are scraped. */
  readonly gauge: (name: string, help: string, labelNames: ReadonlyArray<string>, read: () => GaugeReading) => void
  readonly exposition: Effect.Effect<{ readonly contentType: string; readonly text: string }>
}>() {}
