/**
 * Chunking by structure and size: headings start sections and title their
 * chunks, paragraphs pack up to the size, long paragraphs split at sentence
 * ends (then spaces), consecutive chunks overlap by whole sentences, no chunk
 * exceeds the size, and no text is lost.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { chunkText } from "../layers/knowledge/chunker.ts"

const words = (text: string) => text.replace(/\s+/g, " ").trim()

describe("chunkText", () => {
  it("keeps a short document whole, and gives nothing for white space", () => {
    expect(chunkText("One paragraph.\n\nAnother one.")).toEqual(["One paragraph.\n\nAnother one."])
    expect(chunkText(" \n\n\t ")).toEqual([])
  })

  it("starts a chunk at each heading and titles it with the heading path", () => {
    const text = "# Install\n\nRun npm install.\n\n## On Linux\n\nUse apt first.\n\n# Usage\n\nCall the API."
    expect(chunkText(text)).toEqual([
      "Install\n\nRun npm install.",
      "Install > On Linux\n\nUse apt first.",
      "Usage\n\nCall the API."
    ])
  })

  it("packs paragraphs up to the size, splits long ones at sentence ends, and overlaps by whole sentences", () => {
    const sentence = (n: number) => `Sentence number ${n} says something about topic ${n}.`
    const paragraph = Array.from({ length: 12 }, (_, i) => sentence(i)).join(" ")
    const chunks = chunkText(paragraph, { maxChars: 200, overlapChars: 60 })
    expect(chunks.length).toBeGreaterThan(2)
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(200)
      expect(chunk).toMatch(/^Sentence number \d+ .*\.$/)
    }
    // Each chunk after the first starts with the last sentence of the one before.
    for (let i = 1; i < chunks.length; i++) {
      const previousLast = chunks[i - 1]!.match(/Sentence number \d+ [^.]*\.$/)![0]
      expect(chunks[i]!.startsWith(previousLast)).toBe(true)
    }
  })

  it("never exceeds the size, and loses no word, for any text", () => {
    const text = fc.array(
      fc.oneof(
        fc.constantFrom("# Title", "## Sub", "", "", "\n"),
        fc.lorem({ maxCount: 60, mode: "sentences" }),
        fc.string({ maxLength: 900 }).map((s) => s.replace(/#/g, ""))
      ),
      { maxLength: 40 }
    ).map((lines) => lines.join("\n"))
    fc.assert(
      fc.property(text, fc.integer({ min: 80, max: 1500 }), (document, maxChars) => {
        const chunks = chunkText(document, { maxChars, overlapChars: Math.floor(maxChars / 5) })
        for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(maxChars)
        const body = words(document.split("\n").filter((line) => !/^#{1,6}\s/.test(line)).join(" "))
        const kept = chunks.join(" ")
        for (const word of body.split(" ").filter((w) => w !== "")) expect(kept).toContain(word.slice(0, 40))
      }),
      { numRuns: 300 }
    )
  })
})
