/**
 * `CallStats` that keeps nothing: every window reads empty. For stage tests
 * that need the service without a database, and for the benchmark's
 * comparison of the gateway with and without call records (bench/records.ts).
 */
import { Effect, Layer } from "effect"
import { CallStats } from "../../services/CallStats.ts"

const NOTHING = { p50: undefined, p95: undefined, p99: undefined }

export const CallStatsNone = Layer.succeed(
  CallStats,
  CallStats.of({
    record: () => Effect.void,
    flush: Effect.void,
    window: () =>
      Effect.succeed({
        from: 0,
        requests: 0,
        errorsByCode: {},
        serverErrors: 0,
        latencyMs: NOTHING,
        ttftMs: NOTHING,
        inputTokens: 0,
        outputTokens: 0,
        spend: 0n
      })
  })
)
