/**
 * Monitoring's window math with a controlled clock: known calls (latencies,
 * errors, spend, tokens) recorded by two `CallStatsPg` instances — two
 * processes' buckets — on one fresh database, read back over each window:
 * exact counts, spend and errors, percentiles within the histograms' factor
 * of 2^(1/4); calls outside a window or of another account left out. And
 * payment health's arithmetic.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Context, Effect, Layer, TestClock } from "effect"
import { describe, it } from "vitest"
import { CallStatsPg } from "../layers/monitoring/CallStatsPg.ts"
import { paymentHealth } from "../layers/monitoring/paymentHealth.ts"
import { CallStats, type FinishedCall } from "../services/CallStats.ts"
import { WINDOWS } from "../services/Monitoring.ts"
import { freshStorage } from "./support/moneyLayers.ts"
import { layer } from "./support/layer.ts"

const T0 = Date.UTC(2026, 0, 15, 12, 0, 0)
const MINUTE = 60_000
const HOUR = 3_600_000
const FACTOR = 2 ** 0.25

let serial = 0
const call = (endedAt: number, fields: Partial<FinishedCall> = {}): FinishedCall => ({
  requestId: `req_w${serial++}`,
  accountId: "acct_window",
  keyId: "key_window",
  endpoint: "/v1/chat/completions",
  status: 200,
  code: undefined,
  latencyMs: 10,
  ttftMs: undefined,
  inputTokens: 10,
  outputTokens: 5,
  spend: 1_000_000n,
  endedAt,
  ...fields
})

const within = (value: number | undefined, exact: number) => {
  expect(value).toBeDefined()
  expect(value! / exact).toBeGreaterThanOrEqual(1 / FACTOR)
  expect(value! / exact).toBeLessThanOrEqual(FACTOR)
}

layer(freshStorage({}), { timeout: "60 seconds" })("CallStats windows (two processes, one database)", (it) => {
  it.scoped("adds up both processes' calls exactly over each window, percentiles within the stated error", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const one = Context.get(yield* Layer.build(CallStatsPg), CallStats)
      const two = Context.get(yield* Layer.build(CallStatsPg), CallStats)
      // The last 90 seconds: latencies 1…100 ms, every tenth a 502, four refused with 402, streams with a first byte.
      for (let i = 1; i <= 100; i++) {
        const failed = i % 10 === 0 ? { status: 502, code: "upstream_error" } : i % 25 === 3 ? { status: 402, code: "insufficient_funds" } : undefined
        yield* (i % 2 === 0 ? one : two).record(call(T0 - 90_000 + i * 890, {
          latencyMs: i,
          ...(i <= 20 ? { ttftMs: i / 2 } : {}),
          ...(failed !== undefined ? { ...failed, spend: 0n, inputTokens: 0, outputTokens: 0 } : {})
        }))
      }
      // Older calls, and another account's.
      for (let i = 0; i < 5; i++) yield* one.record(call(T0 - 2 * HOUR + i * MINUTE, { latencyMs: 1000 }))
      for (let i = 0; i < 7; i++) yield* two.record(call(T0 - 3 * 24 * HOUR + i * HOUR, { latencyMs: 1000 }))
      yield* one.record(call(T0 - 40 * 24 * HOUR))
      yield* two.record(call(T0 - 30_000, { accountId: "acct_other" }))
      yield* Effect.all([one.flush, two.flush])

      const recent = yield* one.window("acct_window", WINDOWS["5m"])
      expect(recent).toMatchObject({
        from: T0 - 5 * MINUTE,
        requests: 100,
        serverErrors: 10,
        errorsByCode: { upstream_error: 10, insufficient_funds: 4 },
        inputTokens: 860,
        outputTokens: 430,
        spend: 86_000_000n
      })
      within(recent.latencyMs.p50, 50)
      within(recent.latencyMs.p95, 95)
      within(recent.latencyMs.p99, 99)
      within(recent.ttftMs.p50, 5)
      // Minute by minute from T0 − 5 min to the current minute (T0); the calls fell in the two before it.
      expect(recent.series.map((point) => point.at)).toEqual([5, 4, 3, 2, 1, 0].map((m) => T0 - m * MINUTE))
      expect(recent.series.map((point) => point.requests)).toEqual([0, 0, 0, 33, 67, 0])
      expect(recent.series.reduce((total, point) => total + point.spend, 0n)).toBe(86_000_000n)
      // The other process reads the same.
      expect(yield* two.window("acct_window", WINDOWS["5m"])).toEqual(recent)

      const counts: Record<string, number> = {}
      for (const window of Object.keys(WINDOWS) as Array<keyof typeof WINDOWS>) {
        counts[window] = (yield* one.window("acct_window", WINDOWS[window])).requests
      }
      expect(counts).toEqual({ "5m": 100, "15m": 100, "1h": 100, "6h": 105, "24h": 105, "7d": 112, "30d": 112 })
      expect((yield* one.window("acct_other", WINDOWS["1h"])).requests).toBe(1)
      expect((yield* one.window("acct_none", WINDOWS["1h"]))).toMatchObject({ requests: 0, spend: 0n, latencyMs: { p50: undefined } })
    }))

  it.scoped("keeps one record per call, with what the bucket counted", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const stats = Context.get(yield* Layer.build(CallStatsPg), CallStats)
      yield* stats.record(call(T0 - 1000, { requestId: "req_kept", status: 400, code: "invalid_request", spend: 0n }))
      yield* stats.flush
      yield* stats.flush
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql`SELECT status, code, spend_usd::text AS spend FROM call_records WHERE request_id = 'req_kept'`
      expect(rows).toEqual([{ status: 400, code: "invalid_request", spend: "0.000000000" }])
    }))
})

describe("payment health", () => {
  it("burns the window's spend per hour and runs out of what is available at that rate", () => {
    // $1 spent in 5 minutes: $12 an hour; $6 available lasts half an hour.
    expect(paymentHealth(7_000_000_000n, 1_000_000_000n, 1_000_000_000n, 5 * MINUTE)).toEqual({
      balance: 7_000_000_000n,
      held: 1_000_000_000n,
      available: 6_000_000_000n,
      burnPerHour: 12_000_000_000n,
      runwayHours: 0.5,
      status: "low"
    })
    expect(paymentHealth(100_000_000_000n, 0n, 1_000_000_000n, 24 * HOUR).status).toBe("ok")
    expect(paymentHealth(5n, 0n, 0n, HOUR)).toMatchObject({ runwayHours: undefined, status: "ok" })
    expect(paymentHealth(1_000n, 1_000n, 0n, HOUR).status).toBe("exhausted")
    expect(paymentHealth(-5n, 0n, 1n, HOUR)).toMatchObject({ status: "exhausted", runwayHours: 0 })
  })
})
