/**
 * In a bench server (bench/servers.ts) with `BENCH_PATH_TIMING=1`: how long
 * the server works on a call's path at one connection, timed at Node's
 * socket layer so the code under test is not touched (bench/path.ts). Per
 * call: from its request's head parsed to its first write to another server
 * (the upstream request), from the last read from that server (the answer)
 * to its first write back to the caller, and the two stretches the server
 * waits for others in: its upstream request to the answer's last read, and
 * its first write back to the caller to the next request's head (the
 * caller's turn, and any work the server still does after its answer, which
 * delays reading the next request). Answers "path" with the medians since
 * the last ask, and starts over.
 */
import { IncomingMessage } from "node:http"
import { Socket } from "node:net"
import { Readable } from "node:stream"
import { median } from "./children.ts"

/** Ports of the servers a gateway talks to besides the upstream: PostgreSQL and Redis. */
const STORES = new Set([5432, 6379])

export const timePaths = () => {
  let requestAt: number | undefined
  let upstreamAt: number | undefined
  let answerAt: number | undefined
  let answeredAt: number | undefined
  let toUpstream: Array<number> = []
  let toCaller: Array<number> = []
  let atUpstream: Array<number> = []
  let toNextRequest: Array<number> = []
  const isCallerSide = (socket: Socket) => (socket as Socket & { server?: unknown }).server != null
  const isUpstream = (socket: Socket) => !isCallerSide(socket) && !STORES.has(socket.remotePort ?? 0)

  // Called as Node's parser hands over a request's head, before the server sees the request.
  const incoming = IncomingMessage.prototype as any
  const addHeaderLines = incoming._addHeaderLines
  incoming._addHeaderLines = function(this: IncomingMessage, ...args: Array<any>) {
    if (isCallerSide(this.socket)) {
      const now = performance.now()
      if (answeredAt !== undefined) toNextRequest.push(now - answeredAt)
      ;[requestAt, upstreamAt, answerAt, answeredAt] = [now, undefined, undefined, undefined]
    }
    return addHeaderLines.apply(this, args)
  }
  const push = Readable.prototype.push
  ;(Socket.prototype as any).push = function(this: Socket, chunk: any, encoding?: BufferEncoding) {
    if (chunk !== null && upstreamAt !== undefined && isUpstream(this)) answerAt = performance.now()
    return push.call(this, chunk, encoding)
  }
  const proto = Socket.prototype as any
  for (const name of ["_writev", "_write"]) {
    const write = proto[name]
    proto[name] = function(this: Socket, ...args: Array<any>) {
      const now = performance.now()
      if (requestAt !== undefined && upstreamAt === undefined && isUpstream(this)) {
        upstreamAt = now
        toUpstream.push(now - requestAt)
      } else if (answerAt !== undefined && isCallerSide(this)) {
        toCaller.push(now - answerAt)
        atUpstream.push(answerAt - upstreamAt!)
        answeredAt = now
        requestAt = upstreamAt = answerAt = undefined
      }
      return write.apply(this, args)
    }
  }
  process.on("message", (message) => {
    if (message !== "path") return
    process.send!({
      path: {
        toUpstreamMicros: median(toUpstream) * 1000,
        toCallerMicros: median(toCaller) * 1000,
        atUpstreamMicros: median(atUpstream) * 1000,
        toNextRequestMicros: median(toNextRequest) * 1000
      }
    })
    toUpstream = []
    toCaller = []
    atUpstream = []
    toNextRequest = []
  })
}
