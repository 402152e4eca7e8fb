/**
 * The sandbox model's tokenizer (runs of letters/digits, and every other
 * non-space character alone), used for its usage counts, its token limits and
 * its embeddings.
 */

/** The sandbox model's tokenizer: runs of letters/digits, and every other non-space character alone. */
export const tokenize = (text: string): ReadonlyArray<RegExpExecArray> => [...text.matchAll(TOKEN)]
const TOKEN = /[\p{L}\p{N}_]+|[^\p{L}\p{N}_\s]/gu

export const countTokens = (text: string): number => tokenize(text).length

/** At most `max` tokens of `text`, keeping its spacing. */
export const limitTokens = (text: string, max: number | undefined): { readonly text: string; readonly cut: boolean } => {
  const tokens = tokenize(text)
  if (max === undefined || tokens.length <= max) return { text, cut: false }
  const last = tokens[max - 1]
  return { text: last ? text.slice(0, last.index + last[0].length) : "", cut: true }
}
