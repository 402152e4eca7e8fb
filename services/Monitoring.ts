/**
 * The monitoring summary of an account for a window (CONTRACT.md
 * "Monitoring"): its calls (services/CallStats.ts) and its payment health —
 * balance, held, burn rate over the window, runway, and a status.
 */
import { Context, type Effect } from "effect"
import type { NotFound } from "./ApiError.ts"
import type { CallWindow } from "./CallStats.ts"
import type { Nanos } from "./Money.ts"

/** The contract's windows, in milliseconds. */
export const WINDOWS = {
  "5m": 5 * 60_000,
  "15m": 15 * 60_000,
  "1h": 3_600_000,
  "6h": 6 * 3_600_000,
  "24h": 24 * 3_600_000,
  "7d": 7 * 24 * 3_600_000,
  "30d": 30 * 24 * 3_600_000
} as const
export type MonitoringWindow = keyof typeof WINDOWS

export type PaymentStatus = "ok" | "low" | "exhausted"

export interface PaymentHealth {
  readonly balance: Nanos
  readonly held: Nanos
  /** Balance less what is held. */
  readonly available: Nanos
  /** Spend over the window, per hour. */
  readonly burnPerHour: Nanos
  /** Hours the available balance lasts at that rate; undefined when nothing was spent. */
  readonly runwayHours: number | undefined
  /** `exhausted`: nothing available; `low`: less than `LOW_RUNWAY_HOURS` of runway; else `ok`. */
  readonly status: PaymentStatus
}

export interface MonitoringSummary {
  readonly window: MonitoringWindow
  readonly from: Date
  readonly to: Date
  readonly calls: CallWindow
  readonly payment: PaymentHealth
}

export class Monitoring extends Context.Tag("svc/Monitoring")<Monitoring, {
  readonly summary: (accountId: string, window: MonitoringWindow) => Effect.Effect<MonitoringSummary, NotFound>
}>() {}
