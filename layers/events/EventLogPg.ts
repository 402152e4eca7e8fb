/**
 * Events stored in the `events` table; pages read newest first by
 * (transaction id, sequence), below the horizon of eventPages.ts.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { EventLog, type EventType, type StoredEvent } from "../../services/EventLog.ts"
import { Ids } from "../../services/Ids.ts"
import { belowHorizon, pageOfEvents } from "./eventPages.ts"

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

export const EventLogPg = Layer.effect(
  EventLog,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    return {
      record: (event) =>
        sql`
          INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
          VALUES (${ids.make("evt")}, ${event.type}, ${event.accountId}, ${event.requestId ?? null},
                  ${event.receiptId ?? null}, ${JSON.stringify(event.data)}::jsonb)`.pipe(Effect.asVoid, Effect.orDie),

      list: (query) => {
        const type = query.type
        const conditions = [
          sql`account_id = ${query.accountId}`,
          ...belowHorizon(sql, query.after !== undefined),
          ...(type === undefined
            ? []
            : "exact" in type
            ? [sql`category = ${type.exact.split(".")[0]!}`, sql`type = ${type.exact}`]
            : [sql`category = ${type.category}`]),
          ...(query.receiptId !== undefined ? [sql`receipt_id = ${query.receiptId}`] : []),
          ...(query.from !== undefined ? [sql`created_at >= ${query.from}`] : []),
          ...(query.to !== undefined ? [sql`created_at < ${query.to}`] : []),
          ...(query.after !== undefined
            ? [sql`(xid, seq) < (${query.after.xid.toString()}::xid8, ${query.after.seq.toString()}::bigint)`]
            : [])
        ]
        return sql<EventRow>`
          SELECT id, type, account_id, request_id, receipt_id, data, created_at, xid::text AS position_xid, seq::text AS position_seq
          FROM events WHERE ${sql.and(conditions)}
          ORDER BY xid DESC, seq DESC LIMIT ${query.limit + 1}`.pipe(
          Effect.orDie,
          Effect.map((rows) => pageOfEvents(rows.map(toEvent), query.limit))
        )
      }
    }
  })
)
