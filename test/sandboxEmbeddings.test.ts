/**
 * The sandbox's embeddings carry meaning, not only shared words: a paraphrase
 * with no content word in common lies closer to what it restates than to an
 * unrelated text, which hashing words alone cannot do; and they stay
 * deterministic unit vectors of the asked length.
 */
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import { embed } from "../plugins/providers/sandbox/embed.ts"
import { wordVectors } from "../plugins/providers/sandbox/wordVectors.ts"

const vector = (text: string, dimensions?: number) =>
  Effect.runSync(embed({ input: [text], upstreamModel: "svc/embed", ...(dimensions ? { dimensions } : {}) })).embeddings[0]!

const cosine = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => a.reduce((sum, x, i) => sum + x * b[i]!, 0)

describe("sandbox embeddings", () => {
  it("are made with the word vectors built at install", () => {
    expect(wordVectors()?.dimensions).toBe(100)
    expect(wordVectors()!.weight("the")).toBeLessThan(0.05)
    expect(wordVectors()!.weight("parcel")).toBeGreaterThan(0.5)
  })

  it.each([
    ["How long can I send a package back?", "A parcel may be returned within thirty days of delivery.", "The moon raises the tides twice a day."],
    ["Which car is quickest?", "This automobile is the fastest vehicle.", "The soup recipe needs onions."],
    ["my laptop keeps crashing", "the computer freezes and reboots", "we planted tulips in spring"]
  ])("put %j nearer its paraphrase than an unrelated text", (question, paraphrase, unrelated) => {
    expect(cosine(vector(question), vector(paraphrase))).toBeGreaterThan(cosine(vector(question), vector(unrelated)) + 0.1)
  })

  it("are deterministic unit vectors of the asked length, also for text with no known word", () => {
    for (const [text, dimensions] of [["Hello there", 256], ["Hello there", 8], ["zzqx ¿¿", 64], ["", 16]] as const) {
      const one = vector(text, dimensions)
      expect(one).toHaveLength(dimensions)
      expect(one).toEqual(vector(text, dimensions))
      expect(Math.hypot(...one)).toBeCloseTo(1, 9)
    }
  })
})
