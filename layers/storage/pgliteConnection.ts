/**
 * The `pg` driver's connection to embedded PGlite: what the driver would send
 * to a server's socket goes to PGlite as one protocol buffer (in its worker,
 * layers/storage/pgliteWorker.ts), and PGlite's raw answer is read by the
 * driver's own protocol parser, as a server's would be. The driver corks its
 * socket around the messages of one statement (parse, bind, describe,
 * execute, sync): they go as one buffer, which PGlite works through in one
 * pass, and one exchange with the worker per statement.
 */
import { EventEmitter } from "node:events"
import type pg from "pg"
import { parse, serialize } from "pg-protocol"
import type { ProtocolExchange } from "./pgliteWorker.ts"

/** The parts in one new buffer of their exact size (the exchange takes it over). */
const joined = (parts: ReadonlyArray<Uint8Array>) => {
  const whole = new Uint8Array(parts.reduce((length, part) => length + part.length, 0))
  let offset = 0
  for (const part of parts) {
    whole.set(part, offset)
    offset += part.length
  }
  return whole
}

export class PgliteConnection extends EventEmitter {
  /** Read by the driver's `end()`: it ends only a connection that was connected. */
  _connecting = false
  /** The driver keeps here which named statements this connection already parsed. */
  readonly parsedStatements: Record<string, string> = {}
  readonly submittedNamedStatements: Record<string, string> = {}
  /** Messages sent while the driver has the socket corked: one statement's, run together. */
  #corked: Array<Uint8Array> | undefined
  /** PGlite's answers, fed to the driver's parser as a socket's data would be. */
  readonly #answers = new EventEmitter()

  /** The parts of a socket the driver touches. */
  readonly stream = {
    cork: () => void (this.#corked ??= []),
    uncork: () => {
      const parts = this.#corked
      this.#corked = undefined
      if (parts !== undefined && parts.length > 0) this.#run(parts)
    },
    destroy: () => this.end()
  }

  constructor(private readonly exchange: ProtocolExchange) {
    super()
    void parse(this.#answers as unknown as NodeJS.ReadableStream, (answer) => {
      if (this.listenerCount("message") > 0) this.emit("message", answer)
      // The driver expects an ErrorResponse as `errorMessage`.
      this.emit(answer.name === "error" ? "errorMessage" : answer.name, answer)
    })
  }

  #send(message: Uint8Array) {
    if (this.#corked !== undefined) this.#corked.push(message)
    else this.#run([message])
  }

  /**
   * Answers come back in the order buffers went; `unheard`: neither the answer nor a failure is the
   * driver's (the session's end, below: once the worker has stopped there is no session to end, and
   * an error emitted then, with nobody left listening, was thrown as an unhandled rejection).
   */
  #run(parts: ReadonlyArray<Uint8Array>, unheard = false) {
    return this.exchange(joined(parts)).then(
      (answer) => {
        if (!unheard && answer.length > 0) this.#answers.emit("data", Buffer.from(answer.buffer, answer.byteOffset, answer.length))
      },
      (error) => void (unheard || this.emit("error", error))
    )
  }

  connect(_port: number, _host: string) {
    this._connecting = true
    // PGlite has no startup or authentication exchange: the connection is ready at once.
    process.nextTick(() => this.emit("readyForQuery"))
  }

  end() {
    // Like a server when its client leaves: an open transaction rolls back and the session's
    // prepared statements go (the next client prepares its own). PGlite stays open: its opener owns it.
    void this.#run([serialize.query("ROLLBACK; DEALLOCATE ALL")], true).then(() => this.emit("end"))
  }

  query(text: string) {
    this.#send(serialize.query(text))
  }
  parse(query: Parameters<typeof serialize.parse>[0]) {
    this.#send(serialize.parse(query))
  }
  bind(config: Parameters<typeof serialize.bind>[0]) {
    this.#send(serialize.bind(config))
  }
  execute(config: Parameters<typeof serialize.execute>[0]) {
    this.#send(serialize.execute(config))
  }
  describe(message: Parameters<typeof serialize.describe>[0]) {
    this.#send(serialize.describe(message))
  }
  close(message: Parameters<typeof serialize.close>[0]) {
    this.#send(serialize.close(message))
  }
  flush() {
    this.#send(serialize.flush())
  }
  sync() {
    this.#send(serialize.sync())
  }
  sendCopyFromChunk(chunk: Buffer) {
    this.#send(serialize.copyData(chunk))
  }
  endCopyFrom() {
    this.#send(serialize.copyDone())
  }
  sendCopyFail(message: string) {
    this.#send(serialize.copyFail(message))
  }

  // A socket's parts that mean nothing here: no TLS, no authentication, no keep-alive.
  requestSsl() {}
  startup() {}
  password() {}
  cancel() {}
  ref() {}
  unref() {}
}

/**
 * The `pg.Pool` options for PGlite: one client at a time (PGlite has one session), each on a
 * connection of its own, kept while idle; `Client` is the driver's client class to extend.
 */
export const pglitePoolOptions = (exchange: ProtocolExchange, Client: typeof pg.Client) => ({
  Client: class extends Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connection: new PgliteConnection(exchange) } as pg.ClientConfig)
    }
  },
  max: 1,
  idleTimeoutMillis: 0
})
