/**
 * Memory under many slow streams: 1,000 streamed calls held open at once
 * against an upstream that sends a frame a second, and the gateway's resident
 * set size once every stream has its first byte (its own process, on the
 * database the bench runs on). Returns megabytes.
 */
import type { ChildProcess } from "node:child_process"
import { Pool } from "undici"
import { nextMessage } from "./children.ts"

const STREAMS = 1000

type Server = { readonly child: ChildProcess; readonly url: string; readonly key?: string }

export const slowStreamsRss = async (startServer: (args: Array<string>) => Promise<Server>) => {
  const upstream = await startServer(["upstream-slow"])
  const gateway = await startServer(["gateway", upstream.url])
  const pool = new Pool(gateway.url, { connections: STREAMS, headersTimeout: 60_000, bodyTimeout: 60_000 })
  const body = JSON.stringify({ model: "svc/bench", messages: [{ role: "user", content: "one two three four five" }], stream: true })
  let open = 0
  const allOpen = new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`only ${open} of ${STREAMS} slow streams opened in 60 s`)), 60_000)
    for (let i = 0; i < STREAMS; i++) {
      pool.request({
        method: "POST",
        path: "/v1/chat/completions",
        headers: { "content-type": "application/json", authorization: `Bearer ${gateway.key}` },
        body
      }).then((response) => {
        let first = true
        response.body.on("data", () => {
          if (!first) return
          first = false
          if (++open === STREAMS) {
            clearTimeout(deadline)
            resolve()
          }
        })
        response.body.on("error", () => {})
      }, () => {})
    }
  })
  await allOpen
  gateway.child.send("stats")
  const { rss } = await nextMessage<{ rss: number }>(gateway.child, "stats")
  await pool.destroy()
  for (const server of [gateway, upstream]) server.child.send("stop")
  return rss / 1024 / 1024
}
