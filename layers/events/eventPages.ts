/**
 * The order of the event log's pages, and why no event is missed or shown
 * twice while others are written.
 *
 * An event's position is the id of the transaction that wrote it (xid8),
 * then a sequence number. A page lists only events whose transaction id is
 * below the horizon of the reading statement's snapshot (its oldest running
 * transaction, `pg_snapshot_xmin`): each of those transactions has ended, and
 * every transaction still to commit has an id at or above the horizon, so its
 * events, however late they commit, sort above every event already listed.
 * Hence walking down from the newest page sees each event present at the
 * first page exactly once, and a reader polling for what is newer than the
 * head it saw misses nothing. The cost: an event appears only once every
 * transaction older than it, on the whole server, has ended (milliseconds
 * for the gateway's own; a session left open in a transaction delays the
 * log, never a call). Sequence numbers are not in commit order across
 * transactions, so they alone could not give this.
 */
import type { SqlClient } from "@effect/sql"
import type { EventPage, EventPosition, StoredEvent } from "../../services/EventLog.ts"

/**
 * The horizon as a condition, for a page's statement (events here, receipts in UsagePg.ts). After a
 * cursor it is implied (the cursor lies below an earlier horizon) and left out: a second upper bound
 * on `xid` would keep a backward index scan from starting at the cursor.
 */
export const belowHorizon = (sql: SqlClient.SqlClient, afterCursor: boolean) =>
  afterCursor ? [] : [sql`xid < pg_snapshot_xmin(pg_current_snapshot())`]

/** Newest first: the later transaction, then the later sequence number. */
export const newestEventFirst = (a: EventPosition, b: EventPosition): number =>
  a.xid !== b.xid ? (a.xid < b.xid ? 1 : -1) : a.seq === b.seq ? 0 : a.seq < b.seq ? 1 : -1

/** A page from up to `limit + 1` events in order: the extra one only says there is more. */
export const pageOfEvents = (rows: ReadonlyArray<StoredEvent>, limit: number): EventPage => {
  const items = rows.slice(0, limit)
  return { items, next: rows.length > limit ? items[items.length - 1]!.position : null }
}
