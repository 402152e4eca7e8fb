/**
 * One gateway process per core (`SVC_WORKERS`, on PostgreSQL only): the
 * first process forks the workers with Node's cluster module, which shares
 * one listening socket among them, and supervises them. Each worker is a
 * whole gateway (the same `main`); they share the database, the rate-limit
 * store and the deployments' health, as separate gateway processes always
 * could. A worker that fails before it listens stops the whole start with
 * its exit code (its own line has said why); one that dies later is replaced
 * after a second. SIGTERM or SIGINT is passed to every worker, each drains
 * its calls (src/http/drain.ts), and the supervisor exits once all have.
 */
import cluster, { type Worker } from "node:cluster"
import { Deferred, Effect, Runtime } from "effect"
import { withGatewayFlags } from "./nodeFlags.ts"

/** Pause before a worker that died is replaced, so a crash loop cannot spin. */
const RESPAWN_MS = 1000

/** Runs `count` workers until interrupted (then stops them) or one fails to start (its exit code). */
export const superviseWorkers = (count: number) =>
  Effect.gen(function*() {
    const failedStart = yield* Deferred.make<number>()
    // Lines from Node's callbacks go through the supervisor's own logger (the log format).
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const workers = new Set<Worker>()
    let stopping = false

    const start = () => {
      const worker = cluster.fork()
      workers.add(worker)
      let listening = false
      worker.once("listening", () => void (listening = true))
      worker.once("exit", (code, signal) => {
        workers.delete(worker)
        if (stopping) return
        if (!listening) return void Deferred.unsafeDone(failedStart, Effect.succeed(code ?? 1))
        runFork(Effect.logWarning(`worker ${worker.process.pid} ended (${signal ?? `exit code ${code}`}); starting another`))
        setTimeout(() => stopping || start(), RESPAWN_MS).unref()
      })
    }

    const stopAll = Effect.async<void>((resume) => {
      stopping = true
      if (workers.size === 0) return resume(Effect.void)
      for (const worker of workers) {
        worker.once("exit", () => workers.size === 0 && resume(Effect.void))
        worker.process.kill("SIGTERM")
      }
    })

    yield* Effect.logInfo(`starting ${count} gateway processes (SVC_WORKERS) on one port`)
    // Workers run with the gateway's Node flags however the supervisor itself was started.
    cluster.setupPrimary({ execArgv: withGatewayFlags(process.execArgv) })
    for (let i = 0; i < count; i++) start()
    return yield* Deferred.await(failedStart).pipe(Effect.ensuring(stopAll))
  })

/** Whether this process is a worker the supervisor started. */
export const isWorker = () => cluster.isWorker
