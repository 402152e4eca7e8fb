/**
 * Events stored in the `events` table, and a settled call's events read
 * from its receipt (`settlement_events`, migrations 0022 and 0023); pages read newest
 * first by (transaction id, sequence), below the horizon of eventPages.ts.
 * A page is at most `limit + 1` rows of each kind, merged by position.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { AppConfig } from "../../services/Config.ts"
import { EventLog, type EventQuery, type EventType, type StoredEvent } from "../../services/EventLog.ts"
import { Ids } from "../../services/Ids.ts"
import { belowHorizon, pageOfEvents } from "./eventPages.ts"
import { DERIVED_TYPES, receiptColumnFor } from "./receiptEvents.ts"

interface EventRow {
  readonly id: string
  readonly type: EventType
  readonly account_id: string | null
  readonly request_id: string | null
  readonly receipt_id: string | null
  readonly data: Record<string, unknown>
  readonly created_at: Date
  readonly position_xid: string
  readonly position_seq: string
}

const toEvent = (row: EventRow): StoredEvent => ({
  id: row.id,
  type: row.type,
  accountId: row.account_id,
  ...(row.request_id !== null ? { requestId: row.request_id } : {}),
  ...(row.receipt_id !== null ? { receiptId: row.receipt_id } : {}),
  data: row.data,
  createdAt: row.created_at,
  position: { xid: BigInt(row.position_xid), seq: BigInt(row.position_seq) }
})

/** The types read from receipts (`settlement_events`) that a query may pick. */
const derivedPicked = (type: EventQuery["type"]) =>
  type === undefined
    ? DERIVED_TYPES
    : "exact" in type
    ? DERIVED_TYPES.filter((t) => t === type.exact)
    : DERIVED_TYPES.filter((t) => t.startsWith(`${type.category}.`))

export const EventLogPg = Layer.effect(
  EventLog,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const retentionDays = (yield* AppConfig).file.monitoring.eventRetentionDays

    /** The conditions on an event of either kind (`e`), but its account and receipt. */
    const eventConditions = (query: EventQuery) => {
      const type = query.type
      return [
        ...(type === undefined
          ? []
          : "exact" in type
          ? [sql`e.type = ${type.exact}`]
          : [sql`e.category = ${type.category}`]),
        ...(query.from !== undefined ? [sql`e.created_at >= ${query.from}`] : []),
        ...(query.to !== undefined ? [sql`e.created_at < ${query.to}`] : [])
      ]
    }
    const after = (query: EventQuery, xid: string, seq: string) =>
      query.after === undefined
        ? []
        : [sql`(${sql.literal(xid)}, ${sql.literal(seq)}) < (${query.after.xid.toString()}::xid8, ${query.after.seq.toString()}::bigint)`]

    const stored = (query: EventQuery) =>
      sql`
        SELECT id, type, account_id, request_id, receipt_id, data, created_at, xid, seq FROM events e
        WHERE ${
        sql.and([
          sql`account_id = ${query.accountId}`,
          ...belowHorizon(sql, query.after !== undefined),
          ...eventConditions(query),
          ...(query.receiptId !== undefined ? [sql`receipt_id = ${query.receiptId}`] : []),
          ...after(query, "xid", "seq")
        ])
      }
        ORDER BY xid DESC, seq DESC LIMIT ${query.limit + 1}`

    /**
     * The events of the newest `limit + 1` receipts with at least one that the query picks: each
     * such receipt gives one or more, and a receipt's events sit together in the order. Only
     * receipts above `stored_bound` are read: when the stored events fill a page, nothing older
     * than their last can be in it, so a filter that few receipts match (a leased call's
     * `payment.reserved` in an account that reserves by statement) stops there instead of reading
     * every receipt. A receipt's events sit at `event_seq + 0..7`.
     */
    const derived = (query: EventQuery, types: ReadonlyArray<EventType>) => {
      const picked = [
        ...eventConditions(query),
        sql`e.created_at >= now() - make_interval(days => ${retentionDays})`,
        ...after(query, "r.xid", "e.seq")
      ]
      return sql`
        SELECT e.id, e.type, (r.receipt).account_id, (r.receipt).request_id, (r.receipt).id AS receipt_id,
               e.data, e.created_at, r.xid, e.seq
        FROM (
          SELECT r AS receipt, r.xid FROM receipts r
          WHERE ${
        sql.and([
          sql`r.account_id = ${query.accountId}`,
          sql`r.event_seq IS NOT NULL`,
          ...belowHorizon(sql, query.after !== undefined),
          ...(query.receiptId !== undefined ? [sql`r.id = ${query.receiptId}`] : []),
          ...after(query, "r.xid", "r.event_seq"),
          sql`(r.xid, r.event_seq) > ((SELECT xid FROM stored_bound), (SELECT seq FROM stored_bound))`,
          ...receiptColumn(types),
          sql`EXISTS (SELECT FROM settlement_events(r) e WHERE ${sql.and(picked)})`
        ])
      }
          ORDER BY r.xid DESC, r.event_seq DESC LIMIT ${query.limit + 1}
        ) r CROSS JOIN LATERAL settlement_events(r.receipt) e
        WHERE ${sql.and(picked)}`
    }

    /** A receipt column the picked events need (`receiptColumnFor`), tested before its events are read. */
    const receiptColumn = (types: ReadonlyArray<EventType>) => {
      const column = receiptColumnFor(types)
      return column === "leased" ? [sql`r.leased`] : column === "call_events" ? [sql`r.call_events IS NOT NULL`] : []
    }

    /**
     * Below which no derived event can be on the page: the last stored event when they fill it
     * (less 7, a receipt's events' span), else the start of time. One row.
     */
    const storedBound = (limit: number) =>
      sql`
        SELECT coalesce(max(xid) FILTER (WHERE n > ${limit}), '0'::xid8) AS xid,
               coalesce(max(seq - 7) FILTER (WHERE n > ${limit}), -1) AS seq
        FROM (SELECT xid, seq, row_number() OVER (ORDER BY xid DESC, seq DESC) AS n FROM stored) last`

    return {
      record: (event) =>
        sql`
          INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
          VALUES (${ids.make("evt")}, ${event.type}, ${event.accountId}, ${event.requestId ?? null},
                  ${event.receiptId ?? null}, ${JSON.stringify(event.data)}::jsonb)`.pipe(Effect.asVoid, Effect.orDie),

      list: (query) => {
        const types = derivedPicked(query.type)
        return sql<EventRow>`
          WITH stored AS (${stored(query)}), stored_bound AS (${storedBound(query.limit)})
          SELECT id, type, account_id, request_id, receipt_id, data, created_at,
                 xid::text AS position_xid, seq::text AS position_seq
          FROM (${
          types.length > 0 ? sql`SELECT * FROM stored UNION ALL (${derived(query, types)})` : sql`SELECT * FROM stored`
        }) page
          ORDER BY xid DESC, seq DESC LIMIT ${query.limit + 1}`.pipe(
          Effect.orDie,
          Effect.map((rows) => pageOfEvents(rows.map(toEvent), query.limit))
        )
      }
    }
  })
)
