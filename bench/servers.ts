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
 * "stop" or when the parent goes away.
 */
import { mkdtempSync, openSync, rmSync, writeSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { pipeline } from "node:stream/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Pool } from "undici"
import { Layer, Logger, LogLevel } from "effect"
import { freshDatabase } from "../test/support/database.ts"
import { startFakeOpenAi } from "../test/support/fakeOpenAiUpstream.ts"
import { startGateway } from "../test/support/gateway.ts"
import { coreWith } from "../layers/Core.ts"
import { LedgerPg } from "../layers/billing/LedgerPg.ts"
import { CallStatsNone } from "../layers/monitoring/CallStatsNone.ts"
import { burdenOf } from "./burden.ts"
import { NoopLedger } from "./noopLedger.ts"
import { jsonLines, lineBuffer } from "../src/start/logFormat.ts"
import { answerCoverageMessages } from "./codeCoverage.ts"
import { answerHeapMessages } from "./heapSampling.ts"
import { boundLifetime } from "./lifetime.ts"
import { timePaths } from "./pathTiming.ts"
import { VAST_MODEL } from "./refusal.ts"

const BENCH_MODEL = "svc/bench"
/** Requests and tokens per minute of every bench key: the largest limit there is. */
const BENCH_LIMIT = 2_147_483_647

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

/**
 * The gateway logs as `npm start` runs it: a JSON line per request (src/start/logFormat.ts), here
 * written to /dev/null; warnings and worse also to the bench's own output.
 */
const devNull = openSync("/dev/null", "w")
const requestLines = Layer.mergeAll(
  Logger.minimumLogLevel(LogLevel.Info),
  jsonLines(lineBuffer((text) => writeSync(devNull, `${text}\n`))),
  Logger.add(Logger.filterLogLevel(Logger.prettyLogger(), LogLevel.greaterThanEqual(LogLevel.Warning)))
)

/** Gateway variants: keeping no call records, on the embedded database whatever DATABASE_URL says, billing nothing. */
type Variant = "unrecorded" | "embedded" | "unbilled"

/** The whole gateway over a fresh database (a cold embedded start unless DATABASE_URL is set). */
const startBenchGateway = async (upstreamBaseUrl: string, variant?: Variant) => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-db-"))
  const database = process.env.DATABASE_URL && variant !== "embedded"
    ? await freshDatabase()
    : { env: { SVC_DATA_DIR: dataDir, DATABASE_URL: "" }, drop: async () => {} }
  const gateway = await startGateway({
    logs: requestLines,
    database,
    scanResponses: false,
    ...(variant === "unrecorded" ? { core: coreWith(LedgerPg, CallStatsNone) } : {}),
    ...(variant === "unbilled" ? { core: coreWith(NoopLedger) } : {}),
    config: {
      // Every call counted against rate limits, as on a production install: limits no load here reaches.
      limits: { defaults: { rpm: BENCH_LIMIT, tpm: BENCH_LIMIT, concurrency: 100_000 } },
      models: [{
        id: BENCH_MODEL,
        context: 128000,
        pricing: { input: "0.50", output: "1.50" },
        modalities: ["text"],
        capabilities: ["chat", "streaming"]
      }, {
        // A context large enough that a 5 MB prompt reaches the balance check (bench/refusal.ts).
        id: VAST_MODEL,
        context: 50_000_000,
        pricing: { input: "0.50", output: "1.50" },
        modalities: ["text"],
        capabilities: ["chat"]
      }],
      providers: [{
        id: "bench-upstream",
        plugin: "openai-compatible",
        baseUrl: upstreamBaseUrl,
        deployments: [
          { model: BENCH_MODEL, upstreamModel: "bench-large", cost: { input: "0.40", output: "1.20" } },
          { model: VAST_MODEL, upstreamModel: "bench-vast", cost: { input: "0.40", output: "1.20" } }
        ]
      }]
    }
  })
  const { key } = await gateway.account({ credit: "1000000" })
  const { key: brokeKey } = await gateway.account({ credit: "0" })
  // BENCH_ACCOUNTS=n: n accounts, a key each, for loads that spread calls over many tenants (bench/pair.ts).
  const keys = [key]
  while (keys.length < Number(process.env.BENCH_ACCOUNTS ?? 1)) keys.push((await gateway.account({ credit: "1000000" })).key)
  return {
    url: gateway.url,
    key,
    keys,
    brokeKey,
    close: async () => {
      await gateway.close()
      await database.drop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

const main = async () => {
  const [role, upstreamBaseUrl = "", busyBefore = "0", busyAfter = "0"] = process.argv.slice(2)
  const server = role === "upstream" || role === "upstream-slow" || role === "upstream-paced"
    ? await startFakeOpenAi().then((fake) => {
      // A frame a second: streams that stay open (bench/slowStreams.ts).
      if (role === "upstream-slow") fake.behave({ chunkDelayMs: 1000 })
      // A frame a millisecond: each frame comes in a read of its own, as tokens do (bench/stages.ts).
      if (role === "upstream-paced") fake.behave({ chunkDelayMs: 1 })
      // An upstream that takes its time, as every real model does: each call's code then runs cold (docs/performance.md).
      const delayHeadersMs = Number(process.env.BENCH_UPSTREAM_DELAY_MS ?? 0)
      if (role === "upstream" && delayHeadersMs > 0) fake.behave({ delayHeadersMs })
      return { ...fake, url: fake.baseUrl, key: undefined }
    })
    : role === "proxy" || role === "proxy-busy"
    ? { ...await startBareProxy(upstreamBaseUrl, { before: Number(busyBefore), after: Number(busyAfter) }), key: undefined }
    : role === "proxy-burdened"
    ? { ...await startBareProxy(upstreamBaseUrl, undefined, burdenOf(process.env)), key: undefined }
    : await startBenchGateway(upstreamBaseUrl, role?.startsWith("gateway-") ? role.slice(8) as Variant : undefined)
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
