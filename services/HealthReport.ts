/**
 * Deployment health as the whole cluster knows it, for reports rather than
 * routing: every process's shared numbers of the last five minutes merged,
 * with the breaker state as the shared table has it now. Reads the database
 * (`Health` answers routing from memory).
 */
import { Context, type Effect } from "effect"
import type { DeploymentHealth } from "./Health.ts"

/** Outcome numbers of one or more deployments, merged over processes. */
export type MergedNumbers = Pick<
  DeploymentHealth,
  "requests" | "failures" | "fallbacks" | "p50LatencyMs" | "p95LatencyMs" | "p50TtftMs" | "tokensPerSecond"
>

export interface ClusterHealth {
  /** One deployment (a deployment nobody has measured reads as closed, with nothing measured). */
  readonly deployment: (id: string) => DeploymentHealth
  /** Several deployments counted as one: percentiles from their merged histograms. */
  readonly combined: (ids: ReadonlyArray<string>) => MergedNumbers
}

export class HealthReport extends Context.Tag("svc/HealthReport")<HealthReport, {
  readonly snapshot: Effect.Effect<ClusterHealth>
}>() {}
