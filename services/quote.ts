/**
 * How error messages show what a caller sent: never more than a short
 * prefix of it. A 5 MB model name or a 10 KB `Idempotency-Key` comes back as
 * its first few dozen characters and its length, and no message or `param`
 * leaving the gateway is longer than `MAX_MESSAGE` (`clip`, applied by the
 * error envelope).
 */

/** Characters of a caller's input an error message may quote. */
export const QUOTED_PREFIX = 48

/** Longest `message` (and `param`) an error envelope carries. */
export const MAX_MESSAGE = 400

/** A caller's input as a message quotes it: the whole of it when short, else its prefix and its length. */
export const quote = (input: string, max: number = QUOTED_PREFIX): string =>
  input.length <= max ? input : `${cut(input, max)}… (${input.length} characters)`

/** Text cut to at most `max` characters (an ellipsis marks the cut). */
export const clip = (text: string, max: number = MAX_MESSAGE): string =>
  text.length <= max ? text : `${cut(text, max - 1)}…`

// A cut between the two halves of a surrogate pair would leave half a character.
const cut = (text: string, max: number) => {
  const end = /[\uD800-\uDBFF]/.test(text.charAt(max - 1)) ? max - 1 : max
  return text.slice(0, end)
}
