/**
 * The rolling window's figures, kept as outcomes come and go
 * (layers/health/healthWindow.ts), against the same figures computed from
 * scratch over what the window should hold — the last five minutes or the
 * last 200 outcomes — for generated sequences of outcomes and clock steps.
 */
import { describe, expect, it } from "vitest"
import { FastCheck as fc } from "effect"
import { generationMs, isFallback, makeWindow, nearestRank, WINDOW_MS, WINDOW_OUTCOMES } from "../layers/health/healthWindow.ts"
import type { Outcome } from "../services/Health.ts"

const outcome: fc.Arbitrary<Outcome> = fc.record({
  ok: fc.boolean(),
  latencyMs: fc.integer({ min: 0, max: 50 }),
  ttftMs: fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined }),
  outputTokens: fc.option(fc.integer({ min: 0, max: 500 }), { nil: undefined }),
  attempt: fc.integer({ min: 1, max: 3 })
}).map(({ ttftMs, outputTokens, ...rest }) => ({
  deployment: "d1",
  model: "svc/m",
  ...rest,
  ...(ttftMs !== undefined ? { ttftMs } : {}),
  ...(outputTokens !== undefined ? { outputTokens } : {})
}))

/** The window's figures computed from scratch over `held`. */
const fromScratch = (held: ReadonlyArray<Outcome>) => {
  const ok = held.filter((o) => o.ok)
  const sorted = (values: Array<number>) => values.sort((a, b) => a - b)
  const generating = ok.map((o) => ({ o, ms: generationMs(o) })).filter(({ ms }) => ms !== undefined)
  const ms = generating.reduce((sum, { ms }) => sum + ms!, 0)
  const tokens = generating.reduce((sum, { o }) => sum + o.outputTokens!, 0)
  return {
    requests: held.length,
    failures: held.length - ok.length,
    fallbacks: ok.filter(isFallback).length,
    p50LatencyMs: nearestRank(sorted(ok.map((o) => o.latencyMs)), 0.5),
    p95LatencyMs: nearestRank(sorted(ok.map((o) => o.latencyMs)), 0.95),
    p50TtftMs: nearestRank(sorted(ok.flatMap((o) => (o.ttftMs === undefined ? [] : [o.ttftMs]))), 0.5),
    tokensPerSecond: ms > 0 ? (tokens * 1000) / ms : undefined
  }
}

describe("the health window", () => {
  it("keeps the same figures as a count from scratch, through evictions by age and by number", () => {
    // Each sequence steps its clock by up to 5 ms, 100 ms or a minute, with a rare jump of up to
    // seven minutes: outcomes are pushed out past 200 (only short steps put 200 within five minutes)
    // and age out, one by one and many at once, a full window too.
    const steps = fc.constantFrom(5, 100, 60_000).chain((maxStep) =>
      fc.array(
        fc.tuple(outcome, fc.oneof({ weight: 300, arbitrary: fc.integer({ min: 0, max: maxStep }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 420_000 }) })),
        // `size: "max"`: fast-check's default size keeps arrays to a few dozen, never a full window.
        { minLength: 1, maxLength: 600, size: "max" }
      ))
    fc.assert(fc.property(steps, (sequence) => {
      const window = makeWindow()
      const all: Array<{ at: number; outcome: Outcome }> = []
      let now = 0
      for (const [next, step] of sequence) {
        now += step
        window.add(next, now)
        all.push({ at: now, outcome: next })
        const held = all.filter(({ at }) => at > now - WINDOW_MS).slice(-WINDOW_OUTCOMES).map(({ outcome }) => outcome)
        expect(window.stats(now)).toEqual(fromScratch(held))
      }
      // Later, with nothing new: everything ages out.
      expect(window.stats(now + WINDOW_MS)).toEqual(fromScratch([]))
    }), { numRuns: 60, endOnFailure: true }) // shrinking sequences this long would take minutes
  })
})
