/**
 * Payment health from a balance and a window's spend: the burn rate is the
 * window's spend per hour, the runway how long what is available lasts at
 * it. Exhausted when nothing is available, low under a day of runway.
 */
import type { Nanos } from "../../services/Money.ts"
import type { PaymentHealth } from "../../services/Monitoring.ts"

export const LOW_RUNWAY_HOURS = 24
const HOUR_MS = 3_600_000

export const paymentHealth = (balance: Nanos, held: Nanos, spend: Nanos, windowMs: number): PaymentHealth => {
  const available = balance - held
  const burnPerHour = (spend * BigInt(HOUR_MS)) / BigInt(windowMs)
  const runwayHours = burnPerHour > 0n ? Math.max(0, Number(available) / Number(burnPerHour)) : undefined
  const status = available <= 0n ? "exhausted" : runwayHours !== undefined && runwayHours < LOW_RUNWAY_HOURS ? "low" : "ok"
  return { balance, held, available, burnPerHour, runwayHours, status }
}
