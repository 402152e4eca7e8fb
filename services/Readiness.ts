/**
 * Whether this process can serve: its database answers and holds every
 * migration this build knows. `GET /readyz` asks, for a load balancer or an
 * orchestrator; `GET /healthz` (liveness) needs nothing but the process.
 */
import { Context, type Effect } from "effect"
import type { ServiceUnavailable } from "./ApiError.ts"

export interface ReadyState {
  /** The newest migration applied to the database. */
  readonly migration: number
}

export class Readiness extends Context.Tag("svc/Readiness")<Readiness, {
  /** Ready, or `ServiceUnavailable` saying why not (database unreachable, or behind this build's schema). */
  readonly check: Effect.Effect<ReadyState, ServiceUnavailable>
}>() {}
