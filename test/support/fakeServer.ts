/**
 * The HTTP plumbing the fake upstreams share: a real server on 127.0.0.1 (random
 * port) that records every request, hands out scripted behaviours (a `once`
 * queue before a standing one), counts client aborts and TCP connections. Each
 * fake supplies only its routes and wire format, through `handle`.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface RecordedRequest {
  readonly method: string
  /** Path and query as sent, e.g. `/v1beta/models/m:streamGenerateContent?alt=sse`. */
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** Parsed JSON, or the raw text when it is not JSON. */
  readonly body: any
}

export interface FakeServer<Behaviour> {
  /** The server's origin followed by `basePath`. */
  readonly baseUrl: string
  readonly requests: Array<RecordedRequest>
  /** Behaviour for every following request. */
  readonly behave: (next: Behaviour) => void
  /** Behaviour for the next request only; queued before the standing one. */
  readonly behaveOnce: (next: Behaviour) => void
  /** Responses the client abandoned before they were complete (the fake's own resets do not count). */
  readonly clientAborts: () => number
  /** Resolves once `clientAborts()` reaches `count`. */
  readonly waitForAborts: (count: number) => Promise<void>
  /** TCP connections accepted so far (keep-alive reuse shows as fewer). */
  readonly connections: () => number
  readonly close: () => Promise<void>
}

/** One request, as a fake's `handle` sees it once its body has been read and recorded. */
export interface FakeExchange<Behaviour> {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  /** `req.url`: path and query. */
  readonly path: string
  /** Parsed JSON, or the raw text when it is not JSON. */
  readonly body: any
  /**
   * The queued once-behaviour, else the standing one. Call it only on routes a
   * behaviour applies to, so that a request the fake refuses (a 404) does not
   * use up a behaviour queued for the next real one.
   */
  readonly behaviour: () => Behaviour
  /** Break the connection on purpose: destroys the socket without counting a client abort. */
  readonly reset: () => void
}

export interface FakeServerOptions<Behaviour> {
  /** Appended to the origin for `baseUrl`, e.g. `/v1`. */
  readonly basePath: string
  /** Answers the request; a returned promise is awaited. */
  readonly handle: (exchange: FakeExchange<Behaviour>) => unknown
}

export const startFakeServer = async <Behaviour extends object>(
  options: FakeServerOptions<Behaviour>
): Promise<FakeServer<Behaviour>> => {
  const requests: Array<RecordedRequest> = []
  const once: Array<Behaviour> = []
  // Every field of a fake's Behaviour is optional: the empty one is a well-behaved upstream.
  let standing = {} as Behaviour
  let aborts = 0
  let connections = 0
  const abortWaiters = new Set<() => void>()
  const noteAbort = () => {
    aborts += 1
    for (const wake of abortWaiters) wake()
  }

  const server = createServer(async (req, res) => {
    const parts: Array<Buffer> = []
    for await (const part of req) parts.push(part as Buffer)
    const text = Buffer.concat(parts).toString("utf8")
    let body: any = text
    try {
      body = JSON.parse(text)
    } catch {
      // Recorded as text: a test may be checking exactly that.
    }
    const path = req.url ?? "/"
    requests.push({ method: req.method ?? "", path, headers: req.headers, body })
    let resetByUs = false
    res.on("close", () => {
      if (!res.writableFinished && !resetByUs) noteAbort()
    })
    await options.handle({
      req,
      res,
      path,
      body,
      behaviour: () => once.shift() ?? standing,
      reset: () => {
        resetByUs = true
        res.socket?.destroy()
      }
    })
  })
  server.on("connection", () => {
    connections += 1
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo

  return {
    baseUrl: `http://127.0.0.1:${port}${options.basePath}`,
    requests,
    behave: (next) => {
      standing = next
    },
    behaveOnce: (next) => {
      once.push(next)
    },
    clientAborts: () => aborts,
    waitForAborts: (count) =>
      new Promise((resolve) => {
        const check = () => {
          if (aborts < count) return
          abortWaiters.delete(check)
          resolve()
        }
        abortWaiters.add(check)
        check()
      }),
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        // Without this, close() waits for idle keep-alive and hung connections.
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
