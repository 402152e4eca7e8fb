/**
 * Property: for any planned models and any envelope, the promised class is
 * never weaker than the one asked for unless a fallback was allowed, and then
 * it is the strongest the model earns; a refusal happens only when nothing
 * planned earns the class and no fallback was allowed.
 */
import { FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import type { PrivacyAsk } from "../layers/privacy/privacyAsk.ts"
import { chooseClass } from "../layers/privacy/privacyClass.ts"
import type { PrivacyClass } from "../services/Config.ts"
import { CLASS_RANK, rankOf, strongest } from "../services/Privacy.ts"

/** What a model can earn: standard always, plus any of the others (earning rules vary by policy). */
const earnable = fc.subarray(CLASS_RANK.slice(1)).map((extra) => new Set<PrivacyClass>(["standard_route", ...extra]))
const ask: fc.Arbitrary<PrivacyAsk> = fc.record({
  requested: fc.constantFrom<PrivacyAsk["requested"]>(...CLASS_RANK, "best_available"),
  allowFallback: fc.boolean()
})

describe("privacy class choice", () => {
  it("never promises less than asked unless allowed, and then the strongest the model earns", () => {
    fc.assert(
      fc.property(ask, fc.array(earnable, { minLength: 1, maxLength: 4 }), (envelope, models) => {
        const choice = chooseClass(envelope, models.map((classes) => [...classes]))
        const asked = envelope.requested === "best_available" ? strongest(models[0]!)! : envelope.requested
        expect(choice.requested).toBe(asked)
        const someoneEarns = models.some((classes) => classes.has(asked))
        if (choice._tag === "Refuse") {
          expect(someoneEarns || envelope.allowFallback).toBe(false)
          return
        }
        if (someoneEarns) {
          expect(choice.served).toBe(asked)
          expect(choice.downgraded).toBe(false)
        } else {
          expect(envelope.allowFallback).toBe(true)
          expect(choice.served).toBe(strongest(models[0]!))
          expect(choice.downgraded).toBe(true)
        }
        // Whatever is promised, some planned model earns it: there is a route that keeps the promise.
        expect(models.some((classes) => classes.has(choice.served))).toBe(true)
        if (!choice.downgraded) expect(rankOf(choice.served)).toBeGreaterThanOrEqual(rankOf(asked))
      }),
      { numRuns: 2000 }
    )
  })

  it("bestAvailable promises the strongest class of the model asked for", () => {
    const models = [new Set<PrivacyClass>(["standard_route", "protected_provider_route"]), new Set<PrivacyClass>(CLASS_RANK)]
    expect(chooseClass({ requested: "best_available", allowFallback: false }, models.map((classes) => [...classes]))).toEqual({
      _tag: "Serve",
      requested: "protected_provider_route",
      served: "protected_provider_route",
      downgraded: false
    })
  })
})
