/**
 * Embedded PGlite in a worker thread of its own. PGlite runs PostgreSQL as
 * WebAssembly on whichever thread calls it: on the gateway's main thread its
 * statements took ~40% of that thread under load (docs/performance.md). Here
 * the main thread only posts each protocol buffer (one statement's messages,
 * layers/storage/pgliteConnection.ts) and gets the raw answer back, while the
 * database works on another core.
 *
 * The worker's code is a plain script evaluated in the worker, loading PGlite
 * from the path this module resolves it to: the same in the TypeScript
 * sources and in the bundle under dist/ (where PGlite stays a package).
 */
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"
import { Data, Effect } from "effect"

/** The database could not be opened in its worker (its words, first line kept). */
export class EmbeddedDatabaseFailed extends Data.TaggedError("EmbeddedDatabaseFailed")<{ readonly reason: string }> {
  get message() {
    return `cannot open the embedded database: ${this.reason}`
  }
}

/** One protocol buffer in (handed over to the worker, unusable here after), PostgreSQL's raw answer out, in order. */
export type ProtocolExchange = (message: Uint8Array<ArrayBuffer>) => Promise<Uint8Array>

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const run = async () => {
  const { PGlite } = require(workerData.pglite)
  const { vector } = require(workerData.vector)
  const db = await PGlite.create(workerData.dataDir, { extensions: { vector } })
  parentPort.on("message", (message) => {
    if (message === "close") {
      db.close().finally(() => parentPort.postMessage({ closed: true }))
      return
    }
    let answer
    try {
      // Synchronous: the file system of a data directory (NodeFS) has nothing to sync afterwards.
      answer = db.execProtocolRawSync(message)
    } catch (error) {
      parentPort.postMessage({ failed: String(error && error.message || error) })
      return
    }
    parentPort.postMessage(answer, [answer.buffer])
  })
  parentPort.postMessage({ ready: true })
}
run().catch((error) => parentPort.postMessage({ failed: String(error && error.message || error) }))
`

/** Where the packages are, from this module (the bundle's, under dist/): the worker loads them from there. */
const resolvePackage = createRequire(import.meta.url)

interface Pending {
  readonly resolve: (answer: Uint8Array) => void
  readonly reject: (error: Error) => void
}

type FromWorker = Uint8Array | { readonly ready?: true; readonly failed?: string; readonly closed?: true }

interface OpenWorker {
  readonly worker: Worker
  readonly exchange: ProtocolExchange
  /** Why the worker is gone, once it is. */
  readonly stopped: () => Error | undefined
}

const failure = (reason: string) => new EmbeddedDatabaseFailed({ reason: reason.split("\n")[0]!.slice(0, 300) })

/** Starts the worker; resumes once the database is open in it, or with why it could not be. */
const startWorker = (dataDir: string) =>
  Effect.async<OpenWorker, EmbeddedDatabaseFailed>((resume) => {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        dataDir,
        pglite: resolvePackage.resolve("@electric-sql/pglite"),
        // pgvector ships as a PGlite extension: vector search runs in the database (layers/knowledge/vectorSearch.ts).
        vector: resolvePackage.resolve("@electric-sql/pglite-pgvector")
      }
    })
    let opening = true
    let stopped: Error | undefined
    const settleOpening = (outcome: Effect.Effect<OpenWorker, EmbeddedDatabaseFailed>) => {
      if (opening) resume(outcome)
      opening = false
    }
    // Answers come back in the order of the buffers: PGlite runs one at a time.
    const pending: Array<Pending> = []
    const exchange: ProtocolExchange = (message) =>
      new Promise((resolve, reject) => {
        if (stopped !== undefined) return reject(stopped)
        pending.push({ resolve, reject })
        worker.postMessage(message, [message.buffer])
      })
    worker.on("message", (message: FromWorker) => {
      if (message instanceof Uint8Array) return pending.shift()?.resolve(message)
      if (message.ready) return settleOpening(Effect.succeed({ worker, exchange, stopped: () => stopped }))
      if (message.failed !== undefined) {
        // An exchange that failed, or else the opening.
        const failed = failure(message.failed)
        pending.shift()?.reject(failed)
        settleOpening(Effect.fail(failed))
      }
    })
    const stop = (error: Error) => {
      stopped ??= error
      for (const waiting of pending.splice(0)) waiting.reject(stopped)
      settleOpening(Effect.fail(failure(error.message)))
    }
    worker.on("error", stop)
    worker.on("exit", () => stop(new Error("the embedded database's worker stopped")))
    // Interrupted while opening: the worker goes too.
    return Effect.promise(() => worker.terminate())
  })

/** Closes the database in its worker (PGlite writes what it holds), then ends the worker. */
const stopWorker = ({ stopped, worker }: OpenWorker) =>
  Effect.async<void>((resume) => {
    if (stopped() !== undefined) return resume(Effect.void)
    worker.once("exit", () => resume(Effect.void))
    worker.on("message", (message: FromWorker) => {
      if (!(message instanceof Uint8Array) && message.closed) void worker.terminate()
    })
    worker.postMessage("close")
  })

/** Opens (or creates) the embedded database in `dataDir` in a worker, for as long as the scope lives. */
export const openPgliteWorker = (dataDir: string) => Effect.acquireRelease(startWorker(dataDir), stopWorker)
