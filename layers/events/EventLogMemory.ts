/**
 * The event log in memory, for unit tests: each recorded event is kept in
 * order with an id (from `Ids`), the time of the `Clock` and its place in
 * the order of recording as its position, and `RecordedEvents` hands them
 * back for assertions.
 *
 * Not modelled: transactions (the real log joins the caller's transaction, so
 * a rolled-back call leaves no events there, but here every event stays), the
 * foreign keys of the `events` table (an unknown account is accepted), and
 * the JSON round trip of `data` (kept as given, not as jsonb would return it).
 */
import { Clock, Context, Effect, Layer } from "effect"
import { EventLog, type EventQuery, type NewEvent, type StoredEvent } from "../../services/EventLog.ts"
import { Ids } from "../../services/Ids.ts"
import { newestEventFirst, pageOfEvents } from "./eventPages.ts"

/** An event as the log holds it (its position aside). */
export interface RecordedEvent extends NewEvent {
  readonly id: string
  readonly createdAt: Date
}

const matches = (query: EventQuery) => (event: StoredEvent) =>
  event.accountId === query.accountId &&
  (query.type === undefined ||
    ("exact" in query.type ? event.type === query.type.exact : event.type.startsWith(`${query.type.category}.`))) &&
  (query.receiptId === undefined || event.receiptId === query.receiptId) &&
  (query.from === undefined || event.createdAt >= query.from) &&
  (query.to === undefined || event.createdAt < query.to) &&
  (query.after === undefined || newestEventFirst(event.position, query.after) > 0)

/** What an in-memory log recorded, oldest first. */
export class RecordedEvents extends Context.Tag("svc/test/RecordedEvents")<RecordedEvents, {
  readonly all: Effect.Effect<ReadonlyArray<RecordedEvent>>
  /** Forgets everything recorded so far (a shared layer between tests). */
  readonly clear: Effect.Effect<void>
}>() {}

/** `EventLog` and the `RecordedEvents` it fills. */
export const EventLogMemory: Layer.Layer<EventLog | RecordedEvents, never, Ids> = Layer.effectContext(
  Effect.gen(function*() {
    const ids = yield* Ids
    let recorded: Array<StoredEvent> = []
    // Each record is its own "transaction": the position is its place in the order of recording.
    let written = 0n
    const log = EventLog.of({
      record: (event) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          written += 1n
          recorded.push({ ...event, id: ids.make("evt"), createdAt: new Date(now), position: { xid: written, seq: written } })
        }),
      list: (query) =>
        Effect.sync(() =>
          pageOfEvents(
            recorded.filter(matches(query)).sort((a, b) => newestEventFirst(a.position, b.position)).slice(0, query.limit + 1),
            query.limit
          )
        )
    })
    const view = RecordedEvents.of({
      all: Effect.sync(() => recorded.map(({ position: _, ...event }) => event)),
      clear: Effect.sync(() => {
        recorded = []
      })
    })
    return Context.make(EventLog, log).pipe(Context.add(RecordedEvents, view))
  })
)
