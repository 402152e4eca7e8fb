/**
 * The gateway as shipped, for the benches that need it: `node dist/main.js`
 * with `SVC_WORKERS` workers on a fresh database (the one the bench runs on),
 * an OpenAI-compatible upstream at `upstreamUrl` behind the model
 * `svc/bench`, and an account with a chat key. Built by `npm run bench`'s
 * callers beforehand (`node scripts/build.mjs`).
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { GATEWAY_NODE_FLAGS } from "../src/start/nodeFlags.ts"
import { freshDatabase } from "../test/support/database.ts"

const ADMIN = "bench-admin-key-for-the-shipped-gateway"

export interface DistGateway {
  readonly url: string
  readonly key: string
  readonly pid: number
  readonly admin: string
  readonly stop: () => Promise<void>
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

export const startDistGateway = async (upstreamUrl: string, workers: number): Promise<DistGateway> => {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-dist-"))
  const database = process.env.DATABASE_URL ? await freshDatabase() : undefined
  writeFileSync(join(dir, "svc.config.json"), JSON.stringify({
    models: [{ id: "svc/bench", context: 128000, pricing: { input: "0.50", output: "1.50" }, modalities: ["text"], capabilities: ["chat", "streaming"] }],
    providers: [{ id: "bench-upstream", plugin: "openai-compatible", baseUrl: upstreamUrl, deployments: [{ model: "svc/bench", upstreamModel: "bench-large", cost: { input: "0.40", output: "1.20" } }] }]
  }))
  const port = await freePort()
  const gateway = spawn(process.execPath, [...GATEWAY_NODE_FLAGS, fileURLToPath(new URL("../dist/main.js", import.meta.url))], {
    env: {
      PATH: process.env.PATH,
      ...(database?.env ?? { DATABASE_URL: "", SVC_DATA_DIR: join(dir, "data") }),
      SVC_CONFIG: join(dir, "svc.config.json"),
      SVC_ADMIN_KEY: ADMIN,
      SVC_WORKERS: String(workers),
      PORT: String(port),
      LOG_FORMAT: "json"
    },
    stdio: "ignore"
  })
  const exited = new Promise<void>((resolve) => gateway.once("exit", () => resolve()))
  const stop = async () => {
    // At once, streams open or not; workers leave when their supervisor's channel closes.
    gateway.kill("SIGKILL")
    await Promise.race([exited, new Promise((wake) => setTimeout(wake, 2000))])
    await database?.drop().catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  }
  const url = `http://127.0.0.1:${port}`
  try {
    const deadline = performance.now() + 60_000
    while (await fetch(`${url}/readyz`).then((r) => r.status, () => 0) !== 200) {
      if (performance.now() > deadline || gateway.exitCode !== null) throw new Error("the gateway did not start")
      await new Promise((wake) => setTimeout(wake, 200))
    }
    const call = async (path: string, body: unknown) => {
      const response = await fetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
        body: JSON.stringify(body)
      })
      return await response.json() as any
    }
    const account = await call("/v1/admin/accounts", { name: "bench", credit_usd: "1000000" })
    const { key } = await call(`/v1/admin/accounts/${account.id}/keys`, { scopes: ["chat"] })
    return { url, key, pid: gateway.pid!, admin: ADMIN, stop }
  } catch (error) {
    await stop()
    throw error
  }
}
