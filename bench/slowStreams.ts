/**
 * Memory under many slow streams: the gateway as shipped (`node
 * dist/main.js`, one worker, on the database the bench runs on) holds 1,000
 * streamed calls open at once against an upstream that sends a frame a
 * second; its resident set size (VmRSS) is read once every stream has its
 * first byte, next to the same process idle. Returns megabytes.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Pool } from "undici"
import { freshDatabase } from "../test/support/database.ts"

const STREAMS = 1000
const ADMIN = "bench-admin-key-for-slow-streams"

type Server = { readonly child: ChildProcess; readonly url: string; readonly key?: string }

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

export const slowStreamsRss = async (startServer: (args: Array<string>) => Promise<Server>) => {
  const upstream = await startServer(["upstream-slow"])
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-memory-"))
  const database = process.env.DATABASE_URL ? await freshDatabase() : undefined
  writeFileSync(join(dir, "svc.config.json"), JSON.stringify({
    models: [{ id: "svc/bench", context: 128000, pricing: { input: "0.50", output: "1.50" }, modalities: ["text"], capabilities: ["chat", "streaming"] }],
    providers: [{ id: "slow", plugin: "openai-compatible", baseUrl: upstream.url, deployments: [{ model: "svc/bench", upstreamModel: "slow", cost: { input: "0.40", output: "1.20" } }] }]
  }))
  const port = await freePort()
  const gateway = spawn(process.execPath, [fileURLToPath(new URL("../dist/main.js", import.meta.url))], {
    env: {
      PATH: process.env.PATH,
      ...(database?.env ?? { DATABASE_URL: "", SVC_DATA_DIR: join(dir, "data") }),
      SVC_CONFIG: join(dir, "svc.config.json"),
      SVC_ADMIN_KEY: ADMIN,
      SVC_WORKERS: "1",
      PORT: String(port),
      LOG_FORMAT: "json"
    },
    stdio: "ignore"
  })
  const url = `http://127.0.0.1:${port}`
  const pool = new Pool(url, { connections: STREAMS + 4, headersTimeout: 60_000, bodyTimeout: 60_000 })
  try {
    const call = async (method: string, path: string, body: unknown, key = ADMIN) => {
      const response = await pool.request({ method: method as "POST", path, headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: JSON.stringify(body) })
      return await response.body.json() as any
    }
    const deadline = Date.now() + 60_000
    while (await fetch(`${url}/readyz`).then((r) => r.status, () => 0) !== 200) {
      if (Date.now() > deadline || gateway.exitCode !== null) throw new Error("the gateway did not start")
      await new Promise((wake) => setTimeout(wake, 200))
    }
    const account = await call("POST", "/v1/admin/accounts", { name: "memory", credit_usd: "1000000" })
    const { key } = await call("POST", `/v1/admin/accounts/${account.id}/keys`, { scopes: ["chat"] })
    const idle = rssOf(gateway.pid!)
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
    const rss = rssOf(gateway.pid!)
    const metrics = await (await pool.request({ method: "GET", path: "/metrics", headers: { authorization: `Bearer ${ADMIN}` } })).body.text()
    const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)`, "m").exec(metrics)?.[1] ?? NaN)
    const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`
    console.log(
      `bench: ${STREAMS} slow streams open in dist/main.js: RSS ${mb(rss)} (idle before them ${mb(idle)}); ` +
        `JS heap used ${mb(gauge("svc_nodejs_heap_size_used_bytes"))} of ${mb(gauge("svc_nodejs_heap_size_total_bytes"))}`
    )
    return rss / 1024 / 1024
  } finally {
    await pool.destroy().catch(() => {})
    gateway.kill("SIGKILL")
    upstream.child.send("stop")
    await database?.drop().catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  }
}
