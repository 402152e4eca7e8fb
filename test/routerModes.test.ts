/**
 * Router modes on a catalogue of known prices, qualities and measured
 * latencies: each picks (and leaves out) what its documented rule says, with
 * its default options or those a config would give it.
 */
import { Either, FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import { classify, strategy as autoStrategy } from "../plugins/router/auto.ts"
import { strategy as bestStrategy } from "../plugins/router/best.ts"
import { strategy as cheapestStrategy } from "../plugins/router/cheapest.ts"
import { strategy as fastStrategy } from "../plugins/router/fast.ts"
import type { Model } from "../services/Catalogue.ts"
import { decodeOptions } from "../services/Registry.ts"
import { type Candidate, type RequestShape, type RouterStrategy, withOptions } from "../services/Router.ts"

/** The mode as the gateway runs it with `raw` as its `routing.modes.<id>` entry. */
const configured = <O>(strategy: RouterStrategy<O>, raw: unknown = {}) =>
  withOptions(strategy, Either.getOrThrow(decodeOptions(strategy, raw)))

const auto = configured(autoStrategy)
const best = configured(bestStrategy)
const cheapest = configured(cheapestStrategy)
const fast = configured(fastStrategy)

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

// cost in nano-dollars for the request; latencies in ms (undefined: never measured)
const candidate = (
  id: string,
  quality: number,
  expectedCost: bigint,
  expectedLatencyMs?: number,
  p95LatencyMs?: number
): Candidate => ({ model: model(id, quality), expectedCost, expectedLatencyMs, p95LatencyMs })

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

describe("router modes that leave models out", () => {
  // expected latency, then measured p95: the best p95 is 500 ms, so 3× leaves out anything over 1,500 ms.
  const quick = candidate("svc/quick", 0.5, 5_000n, 300, 500)
  const steady = candidate("svc/steady", 0.6, 6_000n, 900, 1_200)
  const spiky = candidate("svc/spiky", 0.7, 7_000n, 1_000, 4_000)
  const fresh = candidate("svc/fresh", 0.8, 8_000n)

  it("fast: a slow outlier is left out, with why; models never measured are kept", () => {
    const ranking = fast.rank([spiky, fresh, steady, quick], shape())
    expect(ids(ranking.order)).toEqual(["svc/quick", "svc/steady", "svc/fresh"])
    expect(ranking.reason).toBe("lowest expected latency")
    expect(ranking.dropped).toEqual([
      { model: "svc/spiky", reason: "p95 latency 4000 ms is over 3× the best (500 ms)" }
    ])
  })

  it("fast: the first is never left out, however long its own tail", () => {
    // The fastest expected answer, though its p95 is 18× quick's 500 ms.
    const flaky = candidate("svc/flaky", 0.5, 5_000n, 100, 9_000)
    const ranking = fast.rank([steady, flaky, quick], shape())
    expect(ids(ranking.order)).toEqual(["svc/flaky", "svc/quick", "svc/steady"])
    expect(ranking.dropped).toEqual([])
    const alone = fast.rank([spiky], shape())
    expect([ids(alone.order), alone.dropped]).toEqual([["svc/spiky"], []])
  })

  it("fast: maxP95Ratio from the config is respected", () => {
    expect(ids(configured(fastStrategy, { maxP95Ratio: 2 }).rank([quick, steady, spiky], shape()).order))
      .toEqual(["svc/quick"])
    expect(ids(configured(fastStrategy, { maxP95Ratio: 10 }).rank([quick, steady, spiky], shape()).order))
      .toEqual(["svc/quick", "svc/steady", "svc/spiky"])
  })

  it("fast: options its schema refuses name their field", () => {
    const refused = (raw: unknown) => Either.flip(decodeOptions(fastStrategy, raw)).pipe(Either.getOrThrow)
    expect(refused({ maxP95Ratio: 0.5 }).field).toBe("maxP95Ratio")
    expect(refused({ maxP95Ratio: "3" }).field).toBe("maxP95Ratio")
    expect(refused({ ratio: 3 }).field).toBe("ratio")
  })

  it("best: minQuality leaves out the weaker models, never the best; none by default", () => {
    const strict = configured(bestStrategy, { minQuality: 0.75 })
    const ranking = strict.rank([quick, steady, spiky, fresh], shape())
    expect(ids(ranking.order)).toEqual(["svc/fresh"])
    expect(ranking.dropped.map((d) => d.model)).toEqual(["svc/spiky", "svc/steady", "svc/quick"])
    expect(ids(strict.rank([quick, steady], shape()).order)).toEqual(["svc/steady"])
    expect(best.rank([quick, steady], shape()).dropped).toEqual([])
  })

  it("every mode keeps its first and never loses a candidate: kept and left out are all of them", () => {
    const latency = fc.option(fc.integer({ min: 0, max: 20_000 }), { nil: undefined })
    const candidates = fc.uniqueArray(
      fc.record({
        quality: fc.double({ min: 0, max: 1, noNaN: true }),
        cost: fc.bigInt({ min: 0n, max: 1_000_000n }),
        expected: latency,
        p95: latency
      }),
      { minLength: 1, maxLength: 8, selector: (c) => `${c.quality}` }
    ).map((rows) => rows.map((row, i) => candidate(`svc/m${i}`, row.quality, row.cost, row.expected, row.p95)))
    const strict = [configured(fastStrategy, { maxP95Ratio: 1 }), configured(bestStrategy, { minQuality: 0.9 })]
    const modes = [auto, cheapest, fast, best, ...strict]
    fc.assert(fc.property(candidates, fc.constantFrom(...modes), (list, mode) => {
      const ranking = mode.rank(list, shape())
      expect(ranking.order.length).toBeGreaterThan(0)
      expect([...ids(ranking.order), ...ranking.dropped.map((d) => d.model)].sort()).toEqual(ids(list).sort())
    }))
  })
})
