/**
 * The event log in memory, for unit tests: each recorded event is kept in
 * order with an id (from `Ids`) and the time of the `Clock`, and
 * `RecordedEvents` hands them back for assertions.
 *
 * Not modelled: transactions (the real log joins the caller's transaction, so
 * a rolled-back call leaves no events there, but here every event stays), the
 * foreign keys of the `events` table (an unknown account is accepted), and
 * the JSON round trip of `data` (kept as given, not as jsonb would return it).
 */
import { Clock, Context, Effect, Layer } from "effect"
import { EventLog, type NewEvent } from "../../services/EventLog.ts"
import { Ids } from "../../services/Ids.ts"

/** An event as the log holds it. */
export interface RecordedEvent extends NewEvent {
  readonly id: string
  readonly createdAt: Date
}

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
    let recorded: Array<RecordedEvent> = []
    const log = EventLog.of({
      record: (event) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          recorded.push({ ...event, id: ids.make("evt"), createdAt: new Date(now) })
        })
    })
    const view = RecordedEvents.of({
      all: Effect.sync(() => [...recorded]),
      clear: Effect.sync(() => {
        recorded = []
      })
    })
    return Context.make(EventLog, log).pipe(Context.add(RecordedEvents, view))
  })
)
