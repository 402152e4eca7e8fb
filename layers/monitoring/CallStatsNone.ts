/**
 * `CallStats` that keeps nothing: every window reads empty. For stage tests
 * that need the service without a database, and for the benchmark's
 * comparison of the gateway with and without call records (bench/records.ts).
 */
import { Effect, Layer } from "effect"
import { CallStats } from "../../services/CallStats.ts"
import { callWindow } from "./callWindow.ts"

export const CallStatsNone = Layer.succeed(
  CallStats,
  CallStats.of({
    record: () => Effect.void,
    flush: Effect.void,
    window: () => Effect.succeed(callWindow([], 0, -1, 1))
  })
)
