/**
 * Key changes across gateway processes on one PostgreSQL database: a
 * revocation or a change of limits is announced with `pg_notify` in the
 * statement that makes it (delivered when it commits), and every process
 * listens on its own connection. A process keeps the keys it has seen in
 * memory only while it listens: when the connection is lost it forgets them
 * all and reads every key from the database until it listens again, then
 * forgets once more (whatever changed meanwhile went unheard). So a change
 * reaches another process as fast as PostgreSQL delivers a notification,
 * the same moment a request that was already past its key check would have
 * been served anyway.
 */
import { Effect, Redacted, Schedule, type Scope } from "effect"
import pg from "pg"

/** The channel; the payload is the account whose keys changed. */
export const KEY_CHANGES = "svc_key_changes"

/** Pause before listening again after the connection was lost. */
const RELISTEN_MS = 500

export interface KeyChangeListener {
  /** Whether changes are heard now: only then may keys be kept. */
  readonly listening: () => boolean
}

/**
 * Listens for the scope's life; `changed(accountId)` is told every change, `forget()` every time
 * changes may have gone unheard (the connection lost, or just made).
 */
export const listenForKeyChanges = (
  url: Redacted.Redacted<string>,
  changed: (accountId: string) => void,
  forget: () => void
): Effect.Effect<KeyChangeListener, never, Scope.Scope> =>
  Effect.gen(function*() {
    let listening = false
    /** One connection's life: resolves when it is lost. */
    const session = Effect.acquireUseRelease(
      Effect.tryPromise(async () => {
        const client = new pg.Client({ connectionString: Redacted.value(url), application_name: "svc-key-changes" })
        client.on("error", () => {})
        await client.connect()
        return client
      }),
      (client) =>
        Effect.async<void>((lost) => {
          client.on("notification", (message) => message.channel === KEY_CHANGES && changed(message.payload ?? ""))
          client.once("error", () => lost(Effect.void))
          client.once("end", () => lost(Effect.void))
          client.query(`LISTEN ${KEY_CHANGES}`).then(
            () => {
              forget()
              listening = true
            },
            () => lost(Effect.void)
          )
        }),
      (client) =>
        Effect.sync(() => {
          listening = false
          forget()
          void client.end().catch(() => {})
        })
    )
    yield* Effect.forkScoped(
      session.pipe(Effect.ignore, Effect.repeat(Schedule.spaced(RELISTEN_MS)), Effect.interruptible)
    )
    return { listening: () => listening }
  })
