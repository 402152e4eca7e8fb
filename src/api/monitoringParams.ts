/**
 * Query parameters of the monitoring endpoints (logs, usage, monitoring,
 * receipts): the `accountId` selector, RFC 3339 times, and the event log's
 * own filters and cursor. Each refuses what it cannot read with a 400 that
 * names the parameter and never echoes more than a short prefix.
 */
import { ParseResult, Schema } from "effect"
import { positionCursor } from "./Lists.ts"
import { EVENT_CATEGORIES, EVENT_TYPES, type EventCategory, type EventPosition, type EventType } from "../../services/EventLog.ts"

/** `accountId`: whose records; a key's own account unless an admin key names another (accountSelector.ts). */
export const AccountSelector = Schema.String.pipe(
  Schema.pattern(/^acct_[A-Za-z0-9_-]{1,64}$/, { message: () => "must be an account id (acct_…)" })
).annotations({ description: "The account to read; only an admin key may name another account than its own" })

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/
const TIME_MESSAGE = "must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z"

/** An RFC 3339 time (date, time and offset all required). */
export const Rfc3339 = Schema.transformOrFail(Schema.String, Schema.DateFromSelf, {
  strict: true,
  decode: (text, _, ast) => {
    const time = RFC3339.test(text) ? new Date(text) : undefined
    return time === undefined || Number.isNaN(time.getTime())
      ? ParseResult.fail(new ParseResult.Type(ast, text, TIME_MESSAGE))
      : ParseResult.succeed(time)
  },
  encode: (time) => ParseResult.succeed(time.toISOString())
}).annotations({ description: "RFC 3339 time, e.g. 2026-01-31T12:00:00Z" })

const TYPE_MESSAGE = `must be an event type or a category and a dot (${EVENT_CATEGORIES.map((c) => `${c}.`).join(", ")})`

/** `type`: one event type, or a category prefix such as `payment.`. */
export const EventTypeFilter = Schema.transformOrFail(
  Schema.String,
  Schema.Union(
    Schema.Struct({ exact: Schema.Literal(...EVENT_TYPES) }),
    Schema.Struct({ category: Schema.Literal(...EVENT_CATEGORIES) })
  ),
  {
    strict: true,
    decode: (text, _, ast) => {
      if ((EVENT_TYPES as ReadonlyArray<string>).includes(text)) return ParseResult.succeed({ exact: text as EventType })
      const category = text.endsWith(".") ? text.slice(0, -1) : undefined
      return category !== undefined && (EVENT_CATEGORIES as ReadonlyArray<string>).includes(category)
        ? ParseResult.succeed({ category: category as EventCategory })
        : ParseResult.fail(new ParseResult.Type(ast, text, TYPE_MESSAGE))
    },
    encode: (filter) => ParseResult.succeed("exact" in filter ? filter.exact : `${filter.category}.`)
  }
).annotations({ description: "An event type (provider.route) or a category prefix (payment.)" })

const EVENT_CURSOR = /^(\d{1,20})\.(\d{1,19})$/

/** `cursor` of the event log: the transaction and sequence of the last event shown. */
export const EventCursor = positionCursor(Schema.Struct({ xid: Schema.BigIntFromSelf, seq: Schema.BigIntFromSelf }), {
  read: (text) => {
    const match = EVENT_CURSOR.exec(text)
    return match === null ? undefined : { xid: BigInt(match[1]!), seq: BigInt(match[2]!) }
  },
  write: (position) => `${position.xid}.${position.seq}`
})

export const eventCursorOf: (position: EventPosition) => string = Schema.encodeSync(EventCursor)
