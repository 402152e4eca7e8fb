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
import { DERIVED_TYPES } from "./receiptEvents.ts"

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

/** Whether a query may pick events read from receipts (`settlement_events`). */
const derivable = (type: EventQuery["type"]) =>
  type === undefined ||
  ("exact" in type ? DERIVED_TYPES.includes(type.exact) : DERIVED_TYPES.some((t) => t.startsWith(`${type.category}.`)))

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
          ? [sql`e.category = ${type.exact.split(".")[0]!}`, sql`e.type = ${type.exact}`]
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
     * such receipt gives one or more, and a receipt's events sit together in the order.
     */
    const derived = (query: EventQuery) => {
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
          sql`EXISTS (SELECT FROM settlement_events(r) e WHERE ${sql.and(picked)})`
        ])
      }
          ORDER BY r.xid DESC, r.event_seq DESC LIMIT ${query.limit + 1}
        ) r CROSS JOIN LATERAL settlement_events(r.receipt) e
        WHERE ${sql.and(picked)}`
    }

    return {
      record: (event) =>
        sql`
          INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
          VALUES (${ids.make("evt")}, ${event.type}, ${event.accountId}, ${event.requestId ?? null},
                  ${event.receiptId ?? null}, ${JSON.stringify(event.data)}::jsonb)`.pipe(Effect.asVoid, Effect.orDie),

      list: (query) =>
        sql<EventRow>`
          SELECT id, type, account_id, request_id, receipt_id, data, created_at,
                 xid::text AS position_xid, seq::text AS position_seq
          FROM (${
          derivable(query.type) ? sql`(${stored(query)}) UNION ALL (${derived(query)})` : stored(query)
        }) page
          ORDER BY xid DESC, seq DESC LIMIT ${query.limit + 1}`.pipe(
          Effect.orDie,
          Effect.map((rows) => pageOfEvents(rows.map(toEvent), query.limit))
        )
    }
  })
)
