/**
 * One process's call buckets (layers/monitoring/callBuckets.ts): every call
 * counted in its account's minute and hour, whichever account came before it,
 * and a call that ends in a bucket already written and forgotten counted in a
 * bucket of its own again, never lost.
 */
import { FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import { type BucketRow, HOUR_MS, makeCallBuckets, MINUTE_MS } from "../layers/monitoring/callBuckets.ts"
import type { FinishedCall } from "../services/CallStats.ts"

const call = (accountId: string, endedAt: number, inputTokens = 1): FinishedCall => ({
  requestId: `req_${endedAt}`,
  accountId,
  keyId: undefined,
  endpoint: "/v1/chat/completions",
  status: 200,
  code: undefined,
  latencyMs: 5,
  ttftMs: undefined,
  inputTokens,
  outputTokens: 2,
  spend: 1000n,
  endedAt
})

const keyOf = (row: Pick<BucketRow, "account_id" | "granularity" | "bucket_ms">) => `${row.account_id} ${row.granularity} ${row.bucket_ms}`

describe("call buckets", () => {
  it("count each call in its account's minute and hour, accounts interleaved, through flushes", () => {
    const steps = fc.array(
      fc.record({ account: fc.constantFrom("acct_a", "acct_b", "acct_c"), step: fc.integer({ min: 0, max: 90_000 }), flush: fc.boolean() }),
      { minLength: 1, maxLength: 300, size: "max" }
    )
    fc.assert(fc.property(steps, (sequence) => {
      const buckets = makeCallBuckets()
      // A bucket's last written row holds its whole count (rows are written whole).
      const written = new Map<string, number>()
      const expected = new Map<string, number>()
      const flush = (now: number) => {
        const { rows, written: markWritten } = buckets.changed()
        for (const row of rows) written.set(keyOf(row), row.requests)
        markWritten(now)
      }
      let now = 0
      for (const { account, flush: flushes, step } of sequence) {
        now += step
        buckets.add(call(account, now))
        for (const [granularity, span] of [["minute", MINUTE_MS], ["hour", HOUR_MS]] as const) {
          const key = keyOf({ account_id: account, granularity, bucket_ms: now - (now % span) })
          expected.set(key, (expected.get(key) ?? 0) + 1)
        }
        if (flushes) flush(now)
      }
      flush(now)
      expect(written).toEqual(expected)
    }), { numRuns: 100 })
  })

  it("counts a late call in a bucket of its own once its bucket was written and forgotten", () => {
    const buckets = makeCallBuckets()
    buckets.add(call("acct_a", 10_000))
    buckets.changed().written(MINUTE_MS + 1) // minute 0 is closed and written: forgotten
    buckets.add(call("acct_a", 20_000, 7)) // a call that ended in minute 0, counted late
    const rows = buckets.changed().rows
    expect(rows.find((row) => row.granularity === "minute")).toMatchObject({ bucket_ms: 0, requests: 1, input_tokens: 7 })
  })
})
