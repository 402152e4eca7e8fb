/**
 * Keyset pages in SQL (services/Pagination.ts): rows carry their creation
 * time in whole microseconds as text (`created_us`, selected as
 * `(extract(epoch FROM created_at) * 1000000)::bigint::text`, exact since
 * `extract` is numeric), ids compare with the "C" collation, a page asks for one row more
 * than it shows to learn whether another follows, and the first page starts
 * "after" a position past every row, so both are one prepared statement.
 */
import type { Page, PagePosition, PageRequest } from "../../services/Pagination.ts"

/** RFC 3339 with microseconds, which PostgreSQL reads back exactly. */
const microsText = (micros: bigint) =>
  `${new Date(Number(micros / 1000n)).toISOString().slice(0, 23)}${(micros % 1000n).toString().padStart(3, "0")}Z`

/** Where a page starts, as statement parameters: after `request.after`, or past every row. */
export const startOf = (request: PageRequest) =>
  request.after === undefined
    ? { at: "infinity", id: "" }
    : { at: microsText(request.after.createdAtMicros), id: request.after.id }

/** The page of `rows` (fetched with `LIMIT limit + 1`, newest first). */
export const pageFromRows = <R extends { readonly created_us: string; readonly id: string }, A>(
  rows: ReadonlyArray<R>,
  request: PageRequest,
  toItem: (row: R) => A
): Page<A> => {
  const shown = rows.slice(0, request.limit)
  const last = shown[shown.length - 1]
  const next: PagePosition | null = rows.length > request.limit && last !== undefined
    ? { createdAtMicros: BigInt(last.created_us), id: last.id }
    : null
  return { items: shown.map(toItem), next }
}
