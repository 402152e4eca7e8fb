/**
 * A `pg` client that prepares each parameterized statement once per
 * connection (a named statement, named after a hash of its text) instead of
 * having the server parse and plan it on every call. Our statements have
 * fixed texts, so each connection prepares a few dozen; past a cap (texts
 * built at run time, as tests do) it stops naming new ones.
 *
 * When a newer instance's migration changes a table under a statement this
 * connection prepared (`SELECT *` gaining a column), PostgreSQL refuses the
 * stale statement once; it is then prepared afresh under a new name.
 *
 * It does not tell its server process id. @effect/sql-pg cancels the
 * statement of an interrupted fiber with `pg_cancel_backend(processID)` from
 * another connection and then returns this one to the pool; the signal is
 * delivered asynchronously and can land after that statement has ended, on
 * the next statement of whoever took the connection ("canceling statement
 * due to user request" on an innocent call: the fuzz suite's fingerprint
 * query met it). Without an id it cancels nothing: an abandoned statement
 * (ours are short, all under `statement_timeout`) finishes, and the next one
 * waits behind it on the connection.
 */
import { createHash } from "node:crypto"
import pg from "pg"

/** Enough for every statement the gateway has; a connection never holds more. */
const MAX_PREPARED_PER_CONNECTION = 200

const hashOf = (text: string) => createHash("sha1").update(text).digest("base64url")

const isStalePlan = (error: unknown) =>
  (error as { code?: string } | null)?.code === "0A000" &&
  String((error as Error).message).includes("cached plan must not change result type")

export class PreparingClient extends pg.Client {
  /** Statement text → the name it is prepared under on this connection (hashed only when first seen). */
  readonly #names = new Map<string, string>()
  /** Statements prepared afresh on this connection, to name each one anew. */
  #renamed = 0

  constructor(config?: string | pg.ClientConfig) {
    super(config)
    // See above: no process id, so no cancellation that could hit the connection's next statement.
    Object.defineProperty(this, "processID", { get: () => undefined, set: () => {}, configurable: true })
  }

  override query(config: any, values?: any, callback?: any): any {
    if (typeof config !== "string" || !Array.isArray(values) || values.length === 0) {
      return super.query(config, values, callback)
    }
    let name = this.#names.get(config)
    if (name === undefined) {
      if (this.#names.size >= MAX_PREPARED_PER_CONNECTION) return super.query(config, values, callback)
      name = `svc_${hashOf(config)}`
      this.#names.set(config, name)
    }
    const renameIfStale = (error: unknown) => {
      if (isStalePlan(error)) this.#names.set(config, `svc_${hashOf(config)}_${(++this.#renamed).toString(36)}`)
    }
    if (typeof callback === "function") {
      // A query made from the text and then named: pg copies a config object property by property
      // (a slow, dictionary-mode copy) but takes a query as it is.
      const query = new pg.Query(config, values, (error: Error | undefined, result: unknown) => {
        if (error) renameIfStale(error)
        callback(error, result)
      }) as pg.Query & { name?: string }
      query.name = name
      return super.query(query)
    }
    return (super.query({ name, text: config, values }) as Promise<unknown>).catch((error: unknown) => {
      renameIfStale(error)
      throw error
    })
  }
}
