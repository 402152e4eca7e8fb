/**
 * A fault-injecting TCP proxy on 127.0.0.1 in front of a real server (the
 * shared PostgreSQL), so tests can take "the database" away without touching
 * the server: `stop` resets every connection and refuses new ones, `freeze`
 * keeps connections open but forwards no bytes (a hung server or network),
 * `stopAfter` loses one statement's answer (it ran, its caller never hears),
 * `restart` serves again.
 */
import { createServer, type Server, type Socket, connect } from "node:net"

export interface FaultProxy {
  readonly port: number
  /** Resets every connection and refuses new ones. */
  readonly stop: () => void
  /**
   * Forwards the next message that contains `marker` to the server, drops the server's answer, and
   * stops as it arrives: the statement ran, and its caller never hears. Resolves once stopped.
   */
  readonly stopAfter: (marker: string) => Promise<void>
  /** Forwards nothing in either direction (new connections are accepted and hang). */
  readonly freeze: () => void
  /** Forwards again: held bytes flow; new connections reach the server. */
  readonly restart: () => void
  /** Connections accepted so far. */
  readonly accepted: () => number
  readonly close: () => Promise<void>
}

export const startFaultProxy = async (target: { host: string; port: number }): Promise<FaultProxy> => {
  let mode: "up" | "stopped" | "frozen" = "up"
  let accepted = 0
  const pairs = new Set<[Socket, Socket]>()
  let trap: { readonly marker: Buffer; readonly sprung: () => void } | undefined

  const server: Server = createServer((client) => {
    accepted++
    if (mode === "stopped") {
      client.resetAndDestroy()
      return
    }
    const upstream = connect(target.port, target.host)
    const pair: [Socket, Socket] = [client, upstream]
    pairs.add(pair)
    const drop = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on("error", drop).on("close", drop)
    upstream.on("error", drop).on("close", drop)
    client.pipe(upstream)
    upstream.pipe(client)
    // After the pipe's own listener: the message has gone to the server when this sees it.
    client.on("data", (chunk: Buffer) => {
      if (trap === undefined || !chunk.includes(trap.marker)) return
      const { sprung } = trap
      trap = undefined
      upstream.unpipe(client)
      upstream.once("data", () => {
        stop()
        sprung()
      }).resume()
    })
    if (mode === "frozen") hold(pair)
  })
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
  const port = (server.address() as { port: number }).port

  // Paused sockets still flow through `pipe` when the other side drains: unpipe while frozen.
  const hold = ([client, upstream]: [Socket, Socket]) => {
    client.unpipe(upstream)
    upstream.unpipe(client)
    client.pause()
    upstream.pause()
  }
  const flow = ([client, upstream]: [Socket, Socket]) => {
    client.pipe(upstream)
    upstream.pipe(client)
    client.resume()
    upstream.resume()
  }

  const stop = () => {
    mode = "stopped"
    for (const [client, upstream] of pairs) {
      client.resetAndDestroy()
      upstream.destroy()
    }
    pairs.clear()
  }

  return {
    port,
    stop,
    stopAfter: (marker) => new Promise<void>((sprung) => void (trap = { marker: Buffer.from(marker), sprung })),
    freeze: () => {
      mode = "frozen"
      pairs.forEach(hold)
    },
    restart: () => {
      const wasFrozen = mode === "frozen"
      mode = "up"
      if (wasFrozen) pairs.forEach(flow)
    },
    accepted: () => accepted,
    close: () =>
      new Promise<void>((closed) => {
        for (const [client, upstream] of pairs) {
          client.destroy()
          upstream.destroy()
        }
        server.close(() => closed())
      })
  }
}
