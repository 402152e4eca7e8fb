/**
 * How our pools read `timestamptz` columns: pg's own parser, remembering the
 * text it parsed last. A settlement statement answers two timestamps a
 * receipt, every one of them the statement's `now()` (the columns' default),
 * and parsing each row's text again was ~1.3 µs of a billed call's CPU on a
 * hot account (docs/performance.md, item 106). Each row still gets a `Date`
 * of its own: a caller may keep or change it.
 */
import pg from "pg"

const TIMESTAMPTZ = 1184

const parseTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ, "text") as (text: string) => Date

let lastText: string | undefined
let lastMillis = 0

/** `parseTimestamptz`, from the last text's time when this text is the same. */
export const rememberingTimestamptz = (text: string): Date => {
  if (text !== lastText) {
    lastMillis = parseTimestamptz(text).getTime()
    lastText = text
  }
  return new Date(lastMillis)
}

/** The type parsers a pool's clients use: pg's, with `rememberingTimestamptz`. */
export const poolTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === TIMESTAMPTZ && format !== "binary"
      ? rememberingTimestamptz
      : pg.types.getTypeParser(oid, format as "text")) as pg.CustomTypesConfig["getTypeParser"]
}
