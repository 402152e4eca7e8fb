/**
 * One server of the benchmark, in its own process so that each has its own
 * event loop: `upstream` (`upstream-slow`: a frame a second), `proxy <upstreamBaseUrl>` (`proxy-busy <upstreamBaseUrl> <µs> <µs>`:
 * with busy waits before each upstream request and after its answer, bench/wakeups.ts; `proxy-burdened`: with work of a
 * known kind before each, bench/burden.ts), `gateway <upstreamBaseUrl>` or
 * `gateway-unrecorded <upstreamBaseUrl>` (the same gateway keeping no call records, bench/records.ts),
 * `gateway-embedded` (on PGlite even when DATABASE_URL is set) or `gateway-unbilled` (a no-op ledger).
 * Sends `{ ready: { url, key?, keys? } }` to the parent (`keys`: with
 * BENCH_ACCOUNTS=n, a key for each of n accounts), answers "stats" with
 * `{ stats: { cpuMicros, connections } }` (its CPU time so far; for the
 * upstream, the TCP connections it accepted) and "heap-start"/"heap-stop"
 * with a sampling heap profile (bench/heapSampling.ts), with `BENCH_PATH_TIMING=1` "path" with
 * its work before the upstream request and after the answer (bench/pathTiming.ts), and stops on
 * "stop" or when the parent goes away. Only a gateway's process loads the app (bench/benchGateway.ts)
 * and only the upstream's the fake upstream: the bare proxy's process loads nothing but itself and
 * the bench's hooks, as a bare proxy of its own would. Loaded with the whole app, as it was until
 * session 41, it served 4–6% fewer calls a second at 50 connections (docs/performance.md, item 108).
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { pipeline } from "node:stream/promises"
import { Pool } from "undici"
import type { Variant } from "./benchGateway.ts"
import { burdenOf } from "./burden.ts"
import { answerCoverageMessages } from "./codeCoverage.ts"
import { answerHeapMessages } from "./heapSampling.ts"
import { boundLifetime } from "./lifetime.ts"
import { timePaths } from "./pathTiming.ts"
import { upstreamDelayOf } from "./upstreamDelay.ts"

/** Hop-by-hop headers a proxy must not forward (RFC 9110 7.6.1). */
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te", "trailer", "host"])
const endToEnd = (headers: Record<string, string | Array<string> | undefined>) =>
  Object.fromEntries(Object.entries(headers).filter(([name, value]) => value !== undefined && !HOP.has(name)))

/** Spins for `micros` µs: work a server would do, without allocating or sleeping. */
const busyWait = (micros: number) => {
  const end = process.hrtime.bigint() + BigInt(Math.round(micros * 1000))
  while (process.hrtime.bigint() < end) {
    // spinning
  }
}

/**
 * A bare pass-through proxy: node:http in, undici keep-alive Pool out, bodies piped, nothing rewritten;
 * with `busy`, busy waits that long (µs) before each upstream request and after its answer's head;
 * with `burden`, that work before each upstream request (bench/burden.ts).
 */
const startBareProxy = async (upstreamBaseUrl: string, busy = { before: 0, after: 0 }, burden?: () => unknown) => {
  const upstream = new URL(upstreamBaseUrl)
  const pool = new Pool(upstream.origin, { connections: 128 })
  const target = `${upstream.pathname.replace(/\/+$/, "")}/chat/completions`
  const server = createServer(async (req, res) => {
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") return res.writeHead(404).end()
    try {
      if (busy.before > 0) busyWait(busy.before)
      // Kept with the response: the burden's objects live until the call is over, as a gateway's do.
      if (burden !== undefined) (res as { burden?: unknown }).burden = burden()
      const answer = await pool.request({ method: "POST", path: target, headers: endToEnd(req.headers) as any, body: req })
      if (busy.after > 0) busyWait(busy.after)
      res.writeHead(answer.statusCode, endToEnd(answer.headers) as any)
      await pipeline(answer.body, res)
    } catch {
      if (!res.headersSent) res.writeHead(502).end()
      else res.destroy()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections()
      await Promise.all([new Promise((resolve) => server.close(resolve)), pool.close()])
    }
  }
}

const main = async () => {
  const [role, upstreamBaseUrl = "", busyBefore = "0", busyAfter = "0"] = process.argv.slice(2)
  const server = role === "upstream" || role === "upstream-slow" || role === "upstream-paced"
    ? await import("../test/support/fakeOpenAiUpstream.ts").then(({ startFakeOpenAi }) => startFakeOpenAi()).then((fake) => {
      // A frame a second: streams that stay open (bench/slowStreams.ts).
      if (role === "upstream-slow") fake.behave({ chunkDelayMs: 1000 })
      // A frame a millisecond: each frame comes in a read of its own, as tokens do (bench/stages.ts).
      if (role === "upstream-paced") fake.behave({ chunkDelayMs: 1 })
      // An upstream that takes its time, as every real model does: each call's code then runs cold (docs/performance.md).
      // Every call with BENCH_UPSTREAM_DELAY_MS set, else the targets' delayed calls (bench/upstreamDelay.ts).
      if (role === "upstream") fake.behave({ delayHeadersMs: upstreamDelayOf(Number(process.env.BENCH_UPSTREAM_DELAY_MS ?? 0)) })
      return { ...fake, url: fake.baseUrl, key: undefined }
    })
    : role === "proxy" || role === "proxy-busy"
    ? { ...await startBareProxy(upstreamBaseUrl, { before: Number(busyBefore), after: Number(busyAfter) }), key: undefined }
    : role === "proxy-burdened"
    ? { ...await startBareProxy(upstreamBaseUrl, undefined, burdenOf(process.env)), key: undefined }
    : await import("./benchGateway.ts").then(({ startBenchGateway }) =>
      startBenchGateway(upstreamBaseUrl, role?.startsWith("gateway-") ? role.slice(8) as Variant : undefined)
    )
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await Promise.race([server.close(), new Promise((resolve) => setTimeout(resolve, 5000))])
    process.exit(0)
  }
  const connections = "connections" in server ? server.connections : () => 0
  process.on("message", (message) => {
    if (message === "stop") return stop()
    const { user, system } = process.cpuUsage()
    if (message === "stats") process.send!({ stats: { cpuMicros: user + system, connections: connections(), rss: process.memoryUsage.rss(), heap: process.memoryUsage().heapUsed, external: process.memoryUsage().external, arrayBuffers: process.memoryUsage().arrayBuffers } })
  })
  process.on("disconnect", stop)
  answerHeapMessages()
  answerCoverageMessages()
  if (process.env.BENCH_PATH_TIMING === "1") timePaths()
  process.send!({
    ready: {
      url: server.url,
      key: server.key,
      keys: "keys" in server ? server.keys : undefined,
      brokeKey: "brokeKey" in server ? server.brokeKey : undefined
    }
  })
}

if (process.send !== undefined) {
  // Never outlive a stuck benchmark.
  boundLifetime(`servers.ts ${process.argv[2]}`)
  main().catch((error) => {
    console.error(error)
    process.exit(1)
  })
}
