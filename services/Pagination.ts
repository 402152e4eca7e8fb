/**
 * Keyset pagination for the operator's lists: newest first, by creation time
 * and then id, so a page after the thousandth costs the same as the first.
 * A position is the last item a page showed; the next page starts after it.
 */

/** Items per page unless the caller asks for fewer or more (CONTRACT.md: default 100, max 1000). */
export const DEFAULT_PAGE_SIZE = 100
export const MAX_PAGE_SIZE = 1000

/**
 * Where a page ended: the last item's creation time, in microseconds since the
 * epoch (PostgreSQL keeps microseconds, a `Date` only milliseconds), and its id.
 */
export interface PagePosition {
  readonly createdAtMicros: bigint
  readonly id: string
}

export interface PageRequest {
  readonly limit: number
  /** Absent: the first page. */
  readonly after?: PagePosition | undefined
}

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  /** Where the next page starts; null on the last page. */
  readonly next: PagePosition | null
}

/** The position of an item stamped with a `Date` (in-memory stores, whose times are whole milliseconds). */
export const positionOf = (item: { readonly createdAt: Date; readonly id: string }): PagePosition => ({
  createdAtMicros: BigInt(item.createdAt.getTime()) * 1000n,
  id: item.id
})

/** Newest first; ids (compared as bytes, as the database's "C" collation does) break ties. */
export const newestFirst = (a: PagePosition, b: PagePosition): number =>
  a.createdAtMicros === b.createdAtMicros
    ? (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)
    : a.createdAtMicros < b.createdAtMicros
    ? 1
    : -1

/** One page of `items` (any order) for `request`: what comes after its position, newest first. */
export const pageOf = <A extends { readonly createdAt: Date; readonly id: string }>(
  items: Iterable<A>,
  request: PageRequest
): Page<A> => {
  const after = request.after
  const sorted = [...items]
    .filter((item) => after === undefined || newestFirst(positionOf(item), after) > 0)
    .sort((a, b) => newestFirst(positionOf(a), positionOf(b)))
  const shown = sorted.slice(0, request.limit)
  return { items: shown, next: sorted.length > request.limit ? positionOf(shown[shown.length - 1]!) : null }
}
