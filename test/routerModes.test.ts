/**
 * Router modes on a catalogue of known prices, qualities and measured
 * latencies: each picks what its documented rule says.
 */
import { describe, expect, it } from "vitest"
import { classify, strategy as auto } from "../plugins/router/auto.ts"
import { strategy as best } from "../plugins/router/best.ts"
import { strategy as cheapest } from "../plugins/router/cheapest.ts"
import { strategy as fast } from "../plugins/router/fast.ts"
import type { Model } from "../services/Catalogue.ts"
import type { Candidate, RequestShape } from "../services/Router.ts"

const model = (id: string, quality: number): Model => ({
  id,
  name: id,
  context: 128_000,
  pricing: { input: 0n, output: 0n },
  modalities: ["text"],
  capabilities: ["chat"],
  supportedParameters: [],
  quality,
  tier: "third_party",
  privacyClasses: ["standard_route"]
})

// cost in nano-dollars for the request; latency in ms (undefined: never measured)
const candidate = (id: string, quality: number, expectedCost: bigint, expectedLatencyMs?: number): Candidate => ({
  model: model(id, quality),
  expectedCost,
  expectedLatencyMs
})

const tiny = candidate("svc/tiny", 0.4, 1_000n, 300)
const mid = candidate("svc/mid", 0.7, 20_000n, 900)
const large = candidate("svc/large", 0.95, 400_000n, 2500)
const unmeasured = candidate("svc/new", 0.8, 15_000n)
const catalogue = [large, unmeasured, tiny, mid]

const shape = (overrides: Partial<RequestShape> = {}): RequestShape => ({
  inputTokens: 200,
  requestedOutput: undefined,
  needs: ["chat"],
  streaming: false,
  tools: false,
  images: false,
  structuredOutput: false,
  reasoning: false,
  ...overrides
})

const ids = (order: ReadonlyArray<Candidate>) => order.map((c) => c.model.id)

describe("router modes", () => {
  it("cheapest: lowest expected cost first; equal cost goes to the higher quality", () => {
    expect(ids(cheapest.rank(catalogue, shape()).order)).toEqual(["svc/tiny", "svc/new", "svc/mid", "svc/large"])
    const twin = candidate("svc/tiny-plus", 0.5, 1_000n, 400)
    expect(ids(cheapest.rank([tiny, twin], shape()).order)).toEqual(["svc/tiny-plus", "svc/tiny"])
  })

  it("best: highest quality first", () => {
    expect(ids(best.rank(catalogue, shape()).order)).toEqual(["svc/large", "svc/new", "svc/mid", "svc/tiny"])
  })

  it("fast: lowest measured latency first, unmeasured after, cheapest first", () => {
    expect(ids(fast.rank(catalogue, shape()).order)).toEqual(["svc/tiny", "svc/mid", "svc/large", "svc/new"])
    const ranking = fast.rank([unmeasured, candidate("svc/other", 0.1, 9_000n)], shape())
    expect(ids(ranking.order)).toEqual(["svc/other", "svc/new"])
    expect(ranking.reason).toMatch(/no latency measured/)
  })

  it("auto: classifies the request shape", () => {
    expect(classify(shape())).toBe("simple")
    expect(classify(shape({ inputTokens: 2000 }))).toBe("standard")
    expect(classify(shape({ images: true }))).toBe("standard")
    expect(classify(shape({ requestedOutput: 2000 }))).toBe("standard")
    expect(classify(shape({ tools: true }))).toBe("demanding")
    expect(classify(shape({ structuredOutput: true }))).toBe("demanding")
    expect(classify(shape({ reasoning: true }))).toBe("demanding")
    expect(classify(shape({ inputTokens: 9000 }))).toBe("demanding")
  })

  it("auto: a simple request leans to cost and speed, a demanding one to quality", () => {
    const measured = [tiny, mid, large]
    // simple (q .2, c .5, l .3): tiny scores .2·0 + .5·1 + .3·1 = .8, the best.
    expect(ids(auto.rank(measured, shape()).order)[0]).toBe("svc/tiny")
    // demanding (q .6, c .25, l .15): large .6·1 + 0 + 0 = .6; mid: quality .545·.6=.327 + cost .25·(1-.5)=.125
    // + latency .15·(1-.27)=.109 → .561; tiny: .25 + .15 = .4 → large wins.
    const ranking = auto.rank(measured, shape({ tools: true }))
    expect(ids(ranking.order)).toEqual(["svc/large", "svc/mid", "svc/tiny"])
    expect(ranking.reason).toBe("balanced for a demanding request")
  })

  it("every mode keeps every candidate exactly once", () => {
    for (const mode of [auto, best, cheapest, fast]) {
      expect([...ids(mode.rank(catalogue, shape()).order)].sort()).toEqual(ids(catalogue).sort())
    }
  })
})
