/**
 * Usage from the `receipts` table. Every statement keeps below the event
 * log's horizon (layers/events/eventPages.ts), so the totals and the calls a
 * page lists agree, and a receipt committed late sorts above them.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import type { PrivacyClass } from "../../services/Config.ts"
import { fromNumericColumn } from "../../services/Money.ts"
import { belowHorizon } from "../events/eventPages.ts"
import { Usage, type UsageCall, type UsageFigures, type UsageGrouping, type UsageQuery } from "../../services/Usage.ts"

interface FiguresRow {
  readonly requests: string
  readonly input_tokens: string
  readonly output_tokens: string
  readonly spend: string
}

interface CallRow {
  readonly id: string
  readonly request_id: string
  readonly key_id: string | null
  readonly created_at: Date
  readonly endpoint: string
  readonly model: string
  readonly privacy_class: PrivacyClass
  readonly input_tokens: number
  readonly output_tokens: number
  readonly total_usd: string
  readonly position_xid: string
}

const figures = (row: FiguresRow): UsageFigures => ({
  requests: Number(row.requests),
  inputTokens: Number(row.input_tokens),
  outputTokens: Number(row.output_tokens),
  spend: fromNumericColumn(row.spend)
})

const toCall = (row: CallRow): UsageCall => ({
  receiptId: row.id,
  requestId: row.request_id,
  keyId: row.key_id ?? undefined,
  createdAt: row.created_at,
  endpoint: row.endpoint,
  model: row.model,
  privacyClass: row.privacy_class,
  inputTokens: row.input_tokens,
  outputTokens: row.output_tokens,
  cost: fromNumericColumn(row.total_usd)
})

const GROUP_COLUMN: Record<UsageGrouping, string> = {
  model: "model",
  key: "coalesce(key_id, 'unknown')",
  day: "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
}

export const UsagePg = Layer.effect(
  Usage,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const SUMS = sql.literal(
      "count(*)::text AS requests, coalesce(sum(input_tokens), 0)::text AS input_tokens, " +
        "coalesce(sum(output_tokens), 0)::text AS output_tokens, coalesce(sum(total_usd), 0)::text AS spend"
    )

    const inRange = (query: UsageQuery) =>
      sql.and([
        sql`account_id = ${query.accountId}`,
        ...belowHorizon(sql, query.after !== undefined),
        ...(query.from !== undefined ? [sql`created_at >= ${query.from}`] : []),
        ...(query.to !== undefined ? [sql`created_at < ${query.to}`] : [])
      ])

    const calls = (query: UsageQuery) =>
      sql<CallRow>`
        SELECT id, request_id, key_id, created_at, endpoint, model, privacy_class, input_tokens, output_tokens,
               total_usd::text AS total_usd, xid::text AS position_xid
        FROM receipts
        WHERE ${inRange(query)} ${
        query.after === undefined ? sql`` : sql`AND (xid, id) < (${query.after.xid.toString()}::xid8, ${query.after.id})`
      }
        ORDER BY xid DESC, id DESC LIMIT ${query.limit + 1}`

    const totals = (query: UsageQuery) =>
      Effect.all([
        sql<FiguresRow>`SELECT ${SUMS} FROM receipts WHERE ${inRange(query)}`,
        sql<FiguresRow & { privacy_class: PrivacyClass }>`
          SELECT privacy_class, ${SUMS} FROM receipts WHERE ${inRange(query)} GROUP BY privacy_class ORDER BY privacy_class`
      ]).pipe(Effect.map(([[all], byClass]) => ({
        ...figures(all!),
        byPrivacyClass: byClass.map((row) => ({ privacyClass: row.privacy_class, ...figures(row) }))
      })))

    const groups = (query: UsageQuery, grouping: UsageGrouping) =>
      sql<FiguresRow & { grp: string }>`
        SELECT ${sql.literal(GROUP_COLUMN[grouping])} AS grp, ${SUMS}
        FROM receipts WHERE ${inRange(query)}
        GROUP BY 1 ORDER BY sum(total_usd) DESC, 1`.pipe(
        Effect.map((rows) => rows.map((row) => ({ group: row.grp, ...figures(row) })))
      )

    return Usage.of({
      report: (query) =>
        Effect.gen(function*() {
          const rows = yield* calls(query)
          const shown = rows.slice(0, query.limit).map(toCall)
          const last = rows[query.limit - 1]
          const next = rows.length > query.limit ? { xid: BigInt(last!.position_xid), id: last!.id } : null
          if (query.after !== undefined) return { calls: shown, next }
          return {
            totals: yield* totals(query),
            ...(query.groupBy !== undefined ? { groups: yield* groups(query, query.groupBy) } : {}),
            calls: shown,
            next
          }
        }).pipe(
          // One snapshot for every statement of a page: the totals and the calls agree.
          (page) => sql.withTransaction(Effect.zipRight(sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`, page)),
          Effect.orDie
        )
    })
  })
)
