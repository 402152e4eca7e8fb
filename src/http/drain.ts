/**
 * A graceful stop. When the app's scope closes (SIGTERM or SIGINT through
 * NodeRuntime), the server stops accepting connections and Node closes the
 * idle keep-alive ones; calls in flight finish, and a request that still
 * comes on a kept-alive socket is answered 503 with `Connection: close` (a
 * client retries it elsewhere). After `drainSeconds` whatever is still open
 * is cut; a stream cut there is settled for what was delivered (billing runs
 * on `Stream.ensuring`). The services (database, settlement journal) close
 * only after the server has and every hold is settled or released
 * (`settledOnStop`), so a call cut at the end of the drain is still billed.
 */
import type { Server } from "node:http"
import { Effect, Layer } from "effect"
import { FACTS } from "../../services/ApiError.ts"
import { Billing } from "../../services/Billing.ts"

const stopping = (requestId: string) =>
  JSON.stringify({
    error: {
      code: FACTS.ServiceUnavailable.code,
      type: FACTS.ServiceUnavailable.type,
      message: "The gateway is shutting down; retry the request.",
      param: null,
      request_id: requestId
    }
  })

export const drainOnStop = (server: Server, drainSeconds: number, requestId: () => string): Layer.Layer<never> =>
  Layer.scopedDiscard(
    Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (!server.listening) return
        yield* Effect.logInfo(`stopping: no new connections; calls in flight may finish within ${drainSeconds} s`)
        // The app's handler is gone by now: a request that still arrives on a kept-alive socket
        // is told to go elsewhere, and the socket closes after the answer.
        server.on("request", (_request, response) => {
          const id = requestId()
          response.writeHead(503, { "content-type": "application/json", connection: "close", "retry-after": "1", "x-request-id": id })
          response.end(stopping(id))
        })
        server.closeIdleConnections()
        const cut = setTimeout(() => server.closeAllConnections(), drainSeconds * 1000)
        cut.unref()
        server.once("close", () => clearTimeout(cut))
      })
    )
  )

/** Longest wait for the settlements of the calls cut at the end of a drain (they take milliseconds). */
const SETTLE_WAIT = "10 seconds"

/**
 * Built before the server, so it is finalized after it: waits for the holds of the calls the drain
 * cut to be settled or released before the services they write to close.
 */
export const settledOnStop: Layer.Layer<never, never, Billing> = Layer.scopedDiscard(
  Effect.flatMap(Billing, (billing) =>
    Effect.addFinalizer(() =>
      billing.drained.pipe(
        Effect.timeoutFail({ duration: SETTLE_WAIT, onTimeout: () => "timeout" as const }),
        Effect.catchAll(() => Effect.logWarning(`stopping: some calls were not settled within ${SETTLE_WAIT}; the sweeper will release their holds`))
      )
    ))
)
