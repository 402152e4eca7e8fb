/**
 * Documents into chunks for retrieval, by structure first and size second:
 * a markdown heading starts a new section (and its title is carried into
 * every chunk of the section, so a chunk says what it is about); within a
 * section, paragraphs are packed into chunks of at most `maxChars`; a
 * paragraph longer than that is split at sentence ends, then at spaces.
 * Consecutive chunks of one section overlap by up to `overlapChars` of whole
 * sentences, so an answer that straddles a boundary is whole in one of them.
 */

export interface ChunkOptions {
  /** Longest chunk, in characters (headings included). */
  readonly maxChars: number
  /** Text repeated from the end of the previous chunk of the same section. */
  readonly overlapChars: number
}

export const DEFAULT_CHUNKING: ChunkOptions = { maxChars: 1200, overlapChars: 200 }

interface Section {
  /** The heading path, e.g. "Install > On Linux"; empty before the first heading. */
  readonly heading: string
  readonly paragraphs: ReadonlyArray<string>
}

const HEADING = /^(#{1,6})\s+(.+?)\s*#*\s*$/

/** Markdown sections: each heading closes the previous one and opens its own, under its parents. */
const sectionsOf = (text: string): Array<Section> => {
  const sections: Array<Section> = []
  const path: Array<string> = []
  let paragraphs: Array<string> = []
  let paragraph: Array<string> = []
  const endParagraph = () => {
    if (paragraph.length > 0) paragraphs.push(paragraph.join("\n").trim())
    paragraph = []
  }
  const endSection = () => {
    endParagraph()
    if (paragraphs.length > 0) sections.push({ heading: path.filter(Boolean).join(" > "), paragraphs })
    paragraphs = []
  }
  for (const line of text.replace(/\r\n?/g, "\n").split("\n")) {
    const heading = HEADING.exec(line)
    if (heading !== null) {
      endSection()
      const level = heading[1]!.length
      path.length = level - 1
      path[level - 1] = heading[2]!
      continue
    }
    if (line.trim() === "") endParagraph()
    else paragraph.push(line)
  }
  endSection()
  return sections
}

/** Sentences of a paragraph (ends kept); a run without sentence ends is one sentence. */
const sentencesOf = (paragraph: string): Array<string> =>
  paragraph.split(/(?<=[.!?]["')\]]*)\s+/).filter((sentence) => sentence !== "")

/** Pieces of at most `max` characters, cut at spaces where there are some. */
const hardSplit = (text: string, max: number): Array<string> => {
  const pieces: Array<string> = []
  let rest = text
  while (rest.length > max) {
    const space = rest.lastIndexOf(" ", max)
    const cut = space > max / 2 ? space : max
    pieces.push(rest.slice(0, cut).trim())
    rest = rest.slice(cut).trim()
  }
  if (rest.length > 0) pieces.push(rest)
  return pieces
}

/** A section's text as units no longer than `max`: whole paragraphs, else their sentences, else pieces. */
const unitsOf = (paragraphs: ReadonlyArray<string>, max: number): Array<{ text: string; paragraphEnd: boolean }> =>
  paragraphs.flatMap((paragraph) => {
    const parts = paragraph.length <= max
      ? [paragraph]
      : sentencesOf(paragraph).flatMap((sentence) => (sentence.length <= max ? [sentence] : hardSplit(sentence, max)))
    return parts.map((text, index) => ({ text, paragraphEnd: index === parts.length - 1 }))
  })

/** The chunks of `text`, in order; empty for a text with nothing but white space. */
export const chunkText = (text: string, options: ChunkOptions = DEFAULT_CHUNKING): Array<string> => {
  const chunks: Array<string> = []
  for (const { heading, paragraphs } of sectionsOf(text)) {
    const prefix = heading === "" ? "" : `${heading}\n\n`
    // Never less than a quarter of the size for the text itself, however long the heading path.
    const room = Math.max(Math.floor(options.maxChars / 4), options.maxChars - prefix.length)
    const units = unitsOf(paragraphs, room)
    let current: Array<{ text: string; paragraphEnd: boolean }> = []
    let length = 0
    /** Units in `current` that no earlier chunk holds (the rest is the overlap). */
    let fresh = 0
    const joined = (parts: typeof current) =>
      parts.map((part, index) => part.text + (index === parts.length - 1 ? "" : part.paragraphEnd ? "\n\n" : " ")).join("")
    const flush = () => {
      chunks.push(prefix + joined(current))
      // The overlap: whole units from the end, as many as fit, never the whole chunk again.
      const carried: typeof current = []
      let carriedLength = 0
      for (let i = current.length - 1; i > 0; i--) {
        if (carriedLength + current[i]!.text.length + 2 > options.overlapChars) break
        carried.unshift(current[i]!)
        carriedLength += current[i]!.text.length + 2
      }
      current = carried
      length = carriedLength
      fresh = 0
    }
    for (const unit of units) {
      if (fresh > 0 && length + unit.text.length > room) flush()
      // An overlap that leaves no room for the next unit is dropped.
      if (length + unit.text.length > room) {
        current = []
        length = 0
      }
      current.push(unit)
      length += unit.text.length + 2
      fresh++
    }
    if (fresh > 0) chunks.push(prefix + joined(current))
  }
  return chunks
}
