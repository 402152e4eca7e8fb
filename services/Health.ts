/**
 * Health of each deployment, as the router sees it: a rolling record of
 * outcomes (success rate, latency percentiles, time to first token,
 * throughput, consecutive failures) and a circuit breaker per deployment.
 *
 * The breaker and the cooldowns are shared by every gateway process on the
 * same database, so a deployment that fails in one process is avoided by the
 * others too. Reads (`view`, `admits`) answer from memory, so routing never
 * waits on storage; what other processes learned arrives within the sync
 * interval.
 *
 * Breaker: closed → open after `failureThreshold` consecutive failures (or at
 * once on a `Retry-After` cooldown); open → half-open when the cooldown ends,
 * where one call at a time (cluster-wide) may probe; a probe that succeeds
 * closes it, one that fails opens it again for a longer cooldown.
 */
import { Context, type Effect } from "effect"
import type { PrivacyClass } from "./Config.ts"

export type BreakerState = "closed" | "open" | "half_open"

/** One attempt at one deployment, as the router saw it. */
export interface Outcome {
  /** `Deployment.id`. */
  readonly deployment: string
  readonly model: string
  readonly ok: boolean
  /** For failures: what went wrong (UpstreamFailure kinds). */
  readonly failure?: "timeout" | "connection" | "status" | "protocol"
  readonly status?: number
  /** Start of the attempt to its answer (JSON) or to its end (stream). */
  readonly latencyMs: number
  /** Streams: start of the attempt to the first chunk. */
  readonly ttftMs?: number
  /** Output tokens produced, for throughput. */
  readonly outputTokens?: number
  /** 1 for the first attempt of a call; more when earlier ones failed. */
  readonly attempt: number
  /** The upstream asked us to wait this long (429/503 `Retry-After`): the deployment cools down that long. */
  readonly retryAfterSeconds?: number
}

/** What is known about one deployment now (this process's view, merged with what others shared). */
export interface DeploymentHealth {
  readonly deployment: string
  readonly state: BreakerState
  readonly consecutiveFailures: number
  /** Outcomes in the rolling window. */
  readonly requests: number
  readonly failures: number
  /** Successful outcomes that were not the call's first attempt (the call fell back to this one). */
  readonly fallbacks: number
  /**
   * Undefined while nothing was measured. Over successful outcomes only: a refused connection
   * answers fast and would flatter the latency.
   */
  readonly p50LatencyMs: number | undefined
  readonly p95LatencyMs: number | undefined
  readonly p50TtftMs: number | undefined
  /** Output tokens per second over measured successful calls. */
  readonly tokensPerSecond: number | undefined
  /** While open or cooling down: when it may be tried again. */
  readonly retryAt: Date | undefined
}

export class Health extends Context.Tag("svc/Health")<Health, {
  /**
   * Records an attempt's outcome; failures and recoveries reach the other processes. A failure
   * must be the deployment's fault (timeout, connection, protocol, 5xx, and "not now" answers
   * such as 408 or 429): a request the upstream refused as the caller's (other 4xx) says nothing
   * about the deployment, and the router does not record it. A healthy deployment's success costs no database write.
   * It may count when called (services/atOnce.ts): call it where it is to run.
   */
  readonly record: (outcome: Outcome) => Effect.Effect<void>
  /** The current view of a deployment (from memory). */
  readonly view: (deployment: string) => DeploymentHealth
  /**
   * Whether a call may go to the deployment now: closed → yes; open → no; half-open → yes for the
   * one caller that wins the probe (cluster-wide), no for the rest. It may ask when called
   * (services/atOnce.ts): call it where it is to run.
   */
  readonly admits: (deployment: string) => Effect.Effect<boolean>
}>() {}

/** `GET /v1/providers/health` for API keys: per model and privacy class, never naming a provider. */
export interface ModelHealth {
  readonly model: string
  readonly privacy_class: PrivacyClass
  /** Share of its deployments (that earn the class) that are not open. */
  readonly availability: number
  readonly error_rate: number | null
  readonly p50_latency_ms: number | null
  readonly p95_latency_ms: number | null
  readonly fallback_rate: number | null
  readonly healthy_deployments: number
}
