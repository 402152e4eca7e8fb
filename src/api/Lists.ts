/**
 * Paginated lists on the wire (CONTRACT.md): `?limit=&cursor=` in,
 * `{object:"list", data, next_cursor, has_more}` out. A cursor is opaque to
 * callers: base64url of the last item's position (services/Pagination.ts),
 * accepted only in the exact form the server gave out.
 */
import { ParseResult, Schema } from "effect"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, type PagePosition } from "../../services/Pagination.ts"
import { AccountRecord, KeyRecord } from "./Records.ts"

/** The end of year 9999 in microseconds: no creation time lies beyond, and a `Date` can show every one before. */
const LATEST_MICROS = 253_402_300_799_999_999n
const POSITION_TEXT = /^(\d{1,18}):([A-Za-z0-9_-]{1,120})$/

const CURSOR_MESSAGE = "not a cursor from this list (pass next_cursor from the previous page unchanged)"

/**
 * A page cursor ⇄ the position a page starts after: base64url of the position's text, accepted only in
 * the exact spelling the server gave out (base64url decoding forgives characters it does not know).
 * Every list's cursor is one (events and usage have positions of their own, src/api/monitoringParams.ts).
 */
export const positionCursor = <A>(
  position: Schema.Schema<A>,
  text: { readonly read: (text: string) => A | undefined; readonly write: (position: A) => string }
) =>
  Schema.transformOrFail(Schema.String, Schema.typeSchema(position), {
    strict: true,
    decode: (cursor, _, ast) => {
      const decoded = Buffer.from(cursor, "base64url").toString("utf8")
      const read = Buffer.from(decoded).toString("base64url") === cursor ? text.read(decoded) : undefined
      return read === undefined ? ParseResult.fail(new ParseResult.Type(ast, cursor, CURSOR_MESSAGE)) : ParseResult.succeed(read)
    },
    encode: (value) => ParseResult.succeed(Buffer.from(text.write(value)).toString("base64url"))
  }).annotations({ description: "next_cursor of the previous page, unchanged" })

/** `cursor` of the lists by creation time ⇄ the position a page starts after. */
export const Cursor = positionCursor(Schema.Struct({ createdAtMicros: Schema.BigIntFromSelf, id: Schema.String }), {
  read: (text): PagePosition | undefined => {
    const match = POSITION_TEXT.exec(text)
    if (match === null) return undefined
    const createdAtMicros = BigInt(match[1]!)
    return createdAtMicros <= LATEST_MICROS ? { createdAtMicros, id: match[2]! } : undefined
  },
  write: (position) => `${position.createdAtMicros}:${position.id}`
})

export const cursorOf = Schema.encodeSync(Cursor)

const PAGE_SIZE_MESSAGE = `must be a whole number from 1 to ${MAX_PAGE_SIZE}`

const Digits = Schema.String.pipe(Schema.pattern(/^[0-9]{1,4}$/, { message: () => PAGE_SIZE_MESSAGE }))

/** `limit`: digits only (no `1e3`, `1.0` or sign), from 1 to the maximum. */
export const PageSize = Schema.transformOrFail(Digits, Schema.Int, {
  strict: true,
  decode: (text, _, ast) => {
    const size = Number(text)
    return size >= 1 && size <= MAX_PAGE_SIZE
      ? ParseResult.succeed(size)
      : ParseResult.fail(new ParseResult.Type(ast, text, PAGE_SIZE_MESSAGE))
  },
  encode: (size) => ParseResult.succeed(String(size))
}).annotations({ description: `Items per page, 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})` })

/** `?limit=&cursor=` of a list endpoint. */
export const ListParams = Schema.Struct({
  limit: Schema.optional(PageSize),
  cursor: Schema.optional(Cursor)
})

/** The service's page request for decoded list parameters. */
export const pageRequestOf = (params: typeof ListParams.Type) => ({
  limit: params.limit ?? DEFAULT_PAGE_SIZE,
  after: params.cursor
})

export const listOf = <A, I>(item: Schema.Schema<A, I>, identifier: string, description: string) =>
  Schema.Struct({
    object: Schema.Literal("list"),
    data: Schema.Array(item),
    next_cursor: Schema.NullOr(Schema.String).annotations({ description: "Pass as `cursor` for the next page; null on the last" }),
    has_more: Schema.Boolean
  }).annotations({ identifier, description })

export const AccountList = listOf(AccountRecord, "AccountList", "Accounts, newest first")
export const ApiKeyList = listOf(KeyRecord, "ApiKeyList", "An account's keys (revoked ones too), newest first")

/** The wire list of a page whose items are already records, its position spelled by `encode` (`cursorOf`, `eventCursorOf`). */
export const listRecord = <A, P>(
  page: { readonly items: ReadonlyArray<A>; readonly next: P | null },
  encode: (position: P) => string
) => ({
  object: "list" as const,
  data: page.items,
  next_cursor: page.next === null ? null : encode(page.next),
  has_more: page.next !== null
})
