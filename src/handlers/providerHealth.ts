/**
 * Provider health as monitoring shows it: per listed chat model and privacy
 * class for every monitoring key — with no provider, deployment, URL or
 * upstream model in it (callers never learn which upstream serves them) —
 * and per deployment for operator keys. Numbers are the whole cluster's
 * (`HealthReport`). Served by `GET /v1/providers/health` and inside
 * `GET /v1/monitoring`.
 */
import { Effect } from "effect"
import { Catalogue, type Deployment, type Model } from "../../services/Catalogue.ts"
import type { PrivacyClass } from "../../services/Config.ts"
import type { ModelHealth } from "../../services/Health.ts"
import { type ClusterHealth, HealthReport } from "../../services/HealthReport.ts"
import type { DeploymentHealthRecord } from "../api/Records.ts"
import { rate, tenths } from "./figures.ts"


const modelHealth = (
  model: Model,
  privacyClass: PrivacyClass,
  deployments: ReadonlyArray<Deployment>,
  health: ClusterHealth
): ModelHealth => {
  const states = deployments.map((deployment) => health.deployment(deployment.id).state)
  const numbers = health.combined(deployments.map((deployment) => deployment.id))
  return {
    model: model.id,
    privacy_class: privacyClass,
    availability: rate(states.filter((state) => state !== "open").length, states.length) ?? 0,
    error_rate: rate(numbers.failures, numbers.requests),
    p50_latency_ms: tenths(numbers.p50LatencyMs),
    p95_latency_ms: tenths(numbers.p95LatencyMs),
    fallback_rate: rate(numbers.fallbacks, numbers.requests - numbers.failures),
    healthy_deployments: states.filter((state) => state === "closed").length
  }
}

const deploymentRecord = (deployment: Deployment, health: ClusterHealth): typeof DeploymentHealthRecord.Type => {
  const view = health.deployment(deployment.id)
  return {
    id: deployment.id,
    provider: deployment.provider.id,
    model: deployment.model,
    upstream_model: deployment.upstreamModel,
    state: view.state,
    consecutive_failures: view.consecutiveFailures,
    requests: view.requests,
    failures: view.failures,
    error_rate: rate(view.failures, view.requests),
    p50_latency_ms: tenths(view.p50LatencyMs),
    p95_latency_ms: tenths(view.p95LatencyMs),
    p50_ttft_ms: tenths(view.p50TtftMs),
    tokens_per_second: tenths(view.tokensPerSecond),
    retry_at: view.retryAt?.toISOString() ?? null
  }
}

/** The health record for a key: per model and class; with `admin`, per deployment too. */
export const providersHealth = (admin: boolean) =>
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const report = yield* HealthReport
    const chatModels = catalogue.list.filter((model) => model.capabilities.includes("chat"))
    const health = yield* report.snapshot
    const data = chatModels.flatMap((model) =>
      model.privacyClasses.map((privacyClass) =>
        modelHealth(
          model,
          privacyClass,
          catalogue.deployments(model.id).filter((deployment) => deployment.privacyClasses.includes(privacyClass)),
          health
        )
      )
    )
    if (!admin) return { object: "list" as const, data }
    const deployments = catalogue.list.flatMap((model) =>
      catalogue.deployments(model.id).map((deployment) => deploymentRecord(deployment, health))
    )
    return { object: "list" as const, data, deployments }
  })
