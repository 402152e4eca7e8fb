/**
 * `Metrics` on prom-client, in a registry of this gateway's own (not the
 * library's global one, so several gateways in one process stay apart),
 * with Node's process metrics (CPU, memory, event-loop lag) beside ours.
 */
import { Effect, Layer } from "effect"
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client"
import { Metrics } from "../../services/Metrics.ts"

/** Seconds: from a millisecond to a minute, about doubling. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

export const MetricsLive = Layer.sync(Metrics, () => {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: "svc_" })
  const requests = new Counter({
    name: "svc_http_requests_total",
    help: "Requests answered, by route, method, status, model and privacy class",
    labelNames: ["route", "method", "status", "model", "privacy_class"],
    registers: [registry]
  })
  const duration = new Histogram({
    name: "svc_http_request_duration_seconds",
    help: "Time from a request's arrival to its answer's last byte",
    labelNames: ["route", "method", "status", "model", "privacy_class"],
    buckets: LATENCY_BUCKETS,
    registers: [registry]
  })
  const attempts = new Counter({
    name: "svc_upstream_attempts_total",
    help: "Upstream attempts by deployment and outcome (ok, timeout, connection, status, protocol)",
    labelNames: ["deployment", "outcome"],
    registers: [registry]
  })
  const refusals = new Counter({
    name: "svc_rate_limit_refusals_total",
    help: "Calls refused with 429 by a rate limit (rpm, tpm, concurrency)",
    labelNames: ["limit"],
    registers: [registry]
  })
  return Metrics.of({
    requestEnded: (labels, seconds) => {
      const values = {
        route: labels.route,
        method: labels.method,
        status: String(labels.status),
        model: labels.model,
        privacy_class: labels.privacyClass
      }
      requests.inc(values)
      duration.observe(values, seconds)
    },
    upstreamAttempt: (deployment, outcome) => attempts.inc({ deployment, outcome }),
    rateLimitRefused: (limit) => refusals.inc({ limit }),
    gauge: (name, help, labelNames, read) => {
      // prom-client calls `collect` at each scrape: the gauge is set from what `read` says then.
      new Gauge({
        name,
        help,
        labelNames: [...labelNames],
        registers: [registry],
        collect() {
          this.reset()
          for (const [labels, value] of read()) this.set({ ...labels }, value)
        }
      })
    },
    exposition: Effect.promise(async () => ({ contentType: registry.contentType, text: await registry.metrics() }))
  })
})
