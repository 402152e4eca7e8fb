/**
 * Memory under many slow streams: the gateway as shipped (`node
 * dist/main.js`, one worker, on the database the bench runs on) holds 1,000
 * streamed calls open at once against an upstream that sends a frame a
 * second; its resident set size (VmRSS) is read once every stream has its
 * first byte, next to the same process idle. Returns megabytes.
 */
import type { StartServer } from "./children.ts"
import { readFileSync } from "node:fs"
import { Pool } from "undici"
import { startDistGateway } from "./distGateway.ts"

const STREAMS = 1000


const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024

export const slowStreamsRss = async (startServer: StartServer) => {
  const upstream = await startServer(["upstream-slow"])
  const gateway = await startDistGateway(upstream.url, 1).catch((error) => {
    upstream.child.send("stop")
    throw error
  })
  const pool = new Pool(gateway.url, { connections: STREAMS + 4, headersTimeout: 60_000, bodyTimeout: 60_000 })
  try {
    const key = gateway.key
    const idle = rssOf(gateway.pid)
    const body = JSON.stringify({ model: "svc/bench", messages: [{ role: "user", content: "one two three four five" }], stream: true })
    let open = 0
    await new Promise<void>((resolve, reject) => {
      const late = setTimeout(() => reject(new Error(`only ${open} of ${STREAMS} slow streams opened in 60 s`)), 60_000)
      for (let i = 0; i < STREAMS; i++) {
        pool.request({ method: "POST", path: "/v1/chat/completions", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body })
          .then((response) => {
            let first = true
            response.body.on("data", () => {
              if (!first) return
              first = false
              if (++open === STREAMS) {
                clearTimeout(late)
                resolve()
              }
            })
            response.body.on("error", () => {})
          }, () => {})
      }
    })
    const rss = rssOf(gateway.pid)
    const metrics = await (await pool.request({ method: "GET", path: "/metrics", headers: { authorization: `Bearer ${gateway.admin}` } })).body.text()
    const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)`, "m").exec(metrics)?.[1] ?? NaN)
    const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`
    console.log(
      `bench: ${STREAMS} slow streams open in dist/main.js: RSS ${mb(rss)} (idle before them ${mb(idle)}); ` +
        `JS heap used ${mb(gauge("svc_nodejs_heap_size_used_bytes"))} of ${mb(gauge("svc_nodejs_heap_size_total_bytes"))}`
    )
    return rss / 1024 / 1024
  } finally {
    await pool.destroy().catch(() => {})
    await gateway.stop()
    upstream.child.send("stop")
  }
}
