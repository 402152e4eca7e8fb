/**
 * `npm run bench`: the performance targets (bench/targets.ts; `BENCH_SMOKE=1`
 * for CI's short guard). `BENCH_ONLY=all`: the gateway overhead table below and every other bench.
 * Gateway overhead benchmark: the same requests against a
 * bare pass-through proxy and against the gateway, both in front of the same
 * fake upstream, interleaved round by round; prints ratios, which is all a
 * noisy machine lets us compare. Every server and the load generator run in
 * their own processes. Knobs: BENCH_SECONDS (per round at 32 connections, 5),
 * BENCH_ROUNDS (3), BENCH_CPU_PROF=<dir> (CPU profile of the gateway process), BENCH_GATEWAY
 * (the gateway variant of bench/servers.ts the table and the allocation bench load: `gateway-unbilled`…),
 * BENCH_ONLY=fairness (only the fairness table, bench/fairness.ts),
 * BENCH_ONLY=embeddings (only the stall of a huge embeddings answer, bench/embeddingsStall.ts),
 * BENCH_ONLY=table (only the table against the bare proxy: what to profile the hot path with),
 * BENCH_ONLY=retrieval (only retrieval: recall on the evaluation set and search latency, bench/retrieval.ts),
 * BENCH_ONLY=monitoring (only logs and monitoring latency at 1,000,000 events and call records, bench/monitoring.ts),
 * BENCH_ONLY=records (only chat with and without call records, bench/records.ts),
 * BENCH_ONLY=processes (the CPU each process spends per JSON call at 1 and 50 connections, bench/processes.ts),
 * BENCH_ONLY=settlement (PostgreSQL's CPU for the settlement statement alone, by batch and events, bench/settlementStatement.ts),
 * BENCH_ONLY=pair BENCH_BASE=<other checkout> (this checkout against another, interleaved, bench/pair.ts),
 * BENCH_ONLY=warmup (a fresh server's req/s second by second: how long the targets warm each server, bench/warmup.ts),
 * BENCH_ONLY=wakeups (the bare proxy with a busy wait before its upstream request or after its answer, at one connection: what this VM adds, bench/wakeups.ts),
 * BENCH_ONLY=path (the bare proxy's and the gateway's work before the upstream request and after its answer, at one connection, bench/path.ts).
 */
import type { ChildProcess } from "node:child_process"
import { fileURLToPath } from "node:url"
import { withGatewayFlags } from "../src/start/nodeFlags.ts"
import { allocationBench } from "./allocation.ts"
import { children, cpuProfileFlags, loadWith, median, nextMessage, spawnChild } from "./children.ts"
import { embeddingsStall } from "./embeddingsStall.ts"
import { fairness } from "./fairness.ts"
import { measureRefusal } from "./refusal.ts"
import { monitoringBench } from "./monitoring.ts"
import { pairBench } from "./pair.ts"
import { processesBench } from "./processes.ts"
import { recordsBench } from "./records.ts"
import { retrievalBench } from "./retrieval.ts"
import { settlementBench } from "./settlementStatement.ts"
import { slowStreamsRss } from "./slowStreams.ts"
import { stagesBench } from "./stages.ts"
import { targetsBench } from "./targets.ts"
import { warmupBench } from "./warmup.ts"
import { pathBench } from "./path.ts"
import { wakeupsBench } from "./wakeups.ts"
import { codeBench } from "./code.ts"

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const LATENCY_SECONDS = 1.5
const WARMUP_SECONDS = 1.5
const CONCURRENCY = 32

const messages = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "Say hello to the benchmark in a few words, please" }
]
const bodies = {
  json: JSON.stringify({ model: "svc/bench", messages }),
  stream: JSON.stringify({ model: "svc/bench", messages, stream: true })
}
type Mode = keyof typeof bodies
type Target = "bare" | "gateway"

// The whole run is bounded: a stuck child must not keep it alive.
const deadline = setTimeout(() => {
  console.error("bench: over the time limit, stopping")
  for (const child of children) child.kill("SIGKILL")
  process.exit(1)
}, 180_000)

const spawn = (file: string, args: Array<string> = [], execArgv: Array<string> = []) =>
  spawnChild(fileURLToPath(new URL(file, import.meta.url)), args, {}, execArgv)

/** A server of the bench (bench/servers.ts); every one, the bare proxy too, runs with the gateway's Node flags. */
const startServer = async (args: Array<string>, execArgv: Array<string> = []) => {
  const child = spawn("./servers.ts", args, withGatewayFlags(execArgv))
  return { child, ...await nextMessage<{ url: string; key?: string; brokeKey?: string }>(child, "ready") }
}

const main = async () => {
  if (process.env.BENCH_ONLY === undefined || process.env.BENCH_ONLY === "targets") {
    const smoke = process.env.BENCH_SMOKE === "1"
    return within(400_000, "targets", async () => {
      const passed = await targetsBench(startServer, () => spawn("./load.ts"), {
        rounds: smoke ? 1 : ROUNDS,
        seconds: smoke ? 2 : SECONDS,
        latencySeconds: smoke ? 1 : LATENCY_SECONDS,
        smoke
      })
      if (!passed) process.exitCode = 1
      for (const child of children) child.kill()
    })
  }
  if (process.env.BENCH_ONLY === "memory") return within(120_000, "memory", () => slowStreamsRss(startServer).then(() => {}))
  if (process.env.BENCH_ONLY === "stages") return within(300_000, "stages", stagesBench)
  if (process.env.BENCH_ONLY === "embeddings") return embeddingsStall().then(() => clearTimeout(deadline))
  if (process.env.BENCH_ONLY === "retrieval") return retrievalWithin(600_000)
  if (process.env.BENCH_ONLY === "monitoring") return within(600_000, "monitoring", monitoringBench)
  if (process.env.BENCH_ONLY === "processes") {
    await processesBench(startServer, () => spawn("./load.ts"), bodies.json, SECONDS)
    return clearTimeout(deadline)
  }
  if (process.env.BENCH_ONLY === "warmup") {
    await warmupBench(startServer, () => spawn("./load.ts"), bodies)
    return clearTimeout(deadline)
  }
  if (process.env.BENCH_ONLY === "path") {
    await pathBench(startServer, () => spawn("./load.ts"), bodies, ROUNDS, LATENCY_SECONDS)
    return clearTimeout(deadline)
  }
  if (process.env.BENCH_ONLY === "code") {
    await codeBench(startServer, () => spawn("./load.ts"), bodies, LATENCY_SECONDS * 2)
    return clearTimeout(deadline)
  }
  if (process.env.BENCH_ONLY === "wakeups") {
    await wakeupsBench(startServer, () => spawn("./load.ts"), bodies.json, ROUNDS, LATENCY_SECONDS)
    return clearTimeout(deadline)
  }
  if (process.env.BENCH_ONLY === "settlement") return within(300_000, "settlement", settlementBench)
  if (process.env.BENCH_ONLY === "allocation") {
    await allocationBench(startServer, () => spawn("./load.ts"), process.env.BENCH_STREAM === "1" ? bodies.stream : bodies.json, SECONDS)
    return clearTimeout(deadline)
  }
  if (process.env.BENCH_ONLY === "pair") {
    await pairBench(fileURLToPath(new URL("..", import.meta.url)), () => spawn("./load.ts"), bodies, ROUNDS, SECONDS)
    return clearTimeout(deadline)
  }
  if (process.env.BENCH_ONLY === "records") {
    await recordsBench(startServer, () => spawn("./load.ts"), bodies, ROUNDS, SECONDS)
    return clearTimeout(deadline)
  }
  const began = Date.now()
  const upstream = await startServer(["upstream"])
  const [bare, gateway] = await Promise.all([
    startServer(["proxy", upstream.url]),
    startServer([process.env.BENCH_GATEWAY ?? "gateway", upstream.url], cpuProfileFlags)
  ])
  const targets: Record<Target, { url: string; key?: string }> = { bare, gateway }
  console.log(`bench: servers up in ${((Date.now() - began) / 1000).toFixed(1)} s`)

  // Both targets must really answer, whole, before anything is timed.
  for (const [name, target] of Object.entries(targets)) {
    for (const [mode, body] of Object.entries(bodies)) {
      const response = await fetch(`${target.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${target.key ?? "none"}` },
        body
      })
      const text = await response.text()
      const whole = mode === "json" ? text.includes("benchmark") : text.trimEnd().endsWith("data: [DONE]")
      if (response.status !== 200 || !whole) throw new Error(`${name} ${mode}: ${response.status} ${text.slice(0, 300)}`)
    }
  }

  if (process.env.BENCH_ONLY === "fairness") {
    await fairness(gateway, () => spawn("./load.ts"), ROUNDS, SECONDS)
    for (const child of children) child.send("stop")
    clearTimeout(deadline)
    return
  }

  const onlyTable = process.env.BENCH_ONLY === "table"
  if (!onlyTable && process.env.BENCH_ONLY !== "all" && process.env.BENCH_ONLY !== "fairness") throw new Error(`BENCH_ONLY=${process.env.BENCH_ONLY}: unknown`)
  const refusal = onlyTable ? "" : await measureRefusal(gateway, bodies.json)

  const loader = spawn("./load.ts")
  await nextMessage(loader, "ready")
  const stats = (child: ChildProcess) => {
    child.send("stats")
    return nextMessage<{ cpuMicros: number; connections: number }>(child, "stats")
  }
  const servers = { bare: bare.child, gateway: gateway.child }
  const run = loadWith(loader)
  /** One timed run, plus the target's CPU time per request and the upstream connections it opened. */
  const load = async (target: Target, mode: Mode, concurrency: number, seconds: number) => {
    const [before, upstreamBefore] = [await stats(servers[target]), await stats(upstream.child)]
    const result = await run(targets[target], bodies[mode], concurrency, seconds)
    const [after, upstreamAfter] = [await stats(servers[target]), await stats(upstream.child)]
    return {
      ...result,
      cpuPerRequest: (after.cpuMicros - before.cpuMicros) / Math.max(1, result.requests),
      upstreamConnections: upstreamAfter.connections - upstreamBefore.connections
    }
  }
  type Measured = Awaited<ReturnType<typeof load>>

  for (const mode of ["json", "stream"] as const) {
    for (const target of ["bare", "gateway"] as const) await load(target, mode, CONCURRENCY, WARMUP_SECONDS)
  }

  type Row = { mode: Mode; concurrency: number; bare: Array<Measured>; gateway: Array<Measured> }
  const rows: Array<Row> = (["json", "stream"] as const).flatMap((mode) =>
    [CONCURRENCY, 1].map((concurrency) => ({ mode, concurrency, bare: [], gateway: [] }))
  )
  for (let round = 1; round <= ROUNDS; round++) {
    for (const row of rows) {
      for (const target of ["bare", "gateway"] as const) {
        const seconds = row.concurrency === 1 ? LATENCY_SECONDS : SECONDS
        row[target].push(await load(target, row.mode, row.concurrency, seconds))
      }
    }
    console.log(`bench: round ${round}/${ROUNDS} done`)
  }

  const all = (target: Target) => rows.flatMap((row) => row[target])
  const sum = (xs: Array<Measured>, f: (m: Measured) => number) => xs.reduce((n, m) => n + f(m), 0)
  const ms = (x: number) => x.toFixed(2)
  const med = (xs: Array<Measured>, f: (m: Measured) => number) => median(xs.map(f))
  const cell = (xs: Array<Measured>) =>
    `${med(xs, (m) => m.rps).toFixed(0)} · ${ms(med(xs, (m) => m.p50))} / ${ms(med(xs, (m) => m.p99))} · ${
      med(xs, (m) => m.cpuPerRequest).toFixed(0)
    }`
  const opened = (target: Target) =>
    `${sum(all(target), (m) => m.upstreamConnections)} for ${sum(all(target), (m) => m.requests)} requests`
  const perRound = (row: Row, f: (gateway: Measured, bare: Measured) => number) =>
    row.gateway.map((g, i) => f(g, row.bare[i]!))
  const lines = [
    "",
    "| kind, connections | bare proxy: req/s · p50 / p99 ms · CPU µs/req | gateway: same | **gateway ÷ bare req/s** (each round) | **added p50 ms** | gateway ÷ bare CPU/req |",
    "|---|---|---|---:|---:|---:|"
  ]
  for (const row of rows) {
    const ratios = perRound(row, (g, b) => g.rps / b.rps)
    const added = median(perRound(row, (g, b) => g.p50 - b.p50))
    lines.push(
      `| ${row.mode}, ${row.concurrency} | ${cell(row.bare)} | ${cell(row.gateway)} | **${median(ratios).toFixed(2)}** (${
        ratios.map((r) => r.toFixed(2)).join(", ")
      }) | **${added >= 0 ? "+" : ""}${ms(added)}** | ${median(perRound(row, (g, b) => g.cpuPerRequest / b.cpuPerRequest)).toFixed(1)} |`
    )
  }
  lines.push(
    "",
    `Medians of ${ROUNDS} interleaved rounds (${SECONDS} s at ${CONCURRENCY} connections, ${LATENCY_SECONDS} s at 1); ` +
      "ratios and differences are taken within a round, so only they compare across runs. " +
      `CPU is the target process's own (all its threads). Failed requests: bare ${sum(all("bare"), (m) => m.errors)}, gateway ${
        sum(all("gateway"), (m) => m.errors)
      }. Upstream connections opened while measured (keep-alive check): bare ${opened("bare")}, gateway ${
        opened("gateway")
      }. Run took ${((Date.now() - began) / 1000).toFixed(0)} s.`,
    "",
    refusal,
    "",
    "Reproduce: `timeout 300 npm run bench` (env: BENCH_SECONDS, BENCH_ROUNDS, BENCH_CPU_PROF=<dir>)."
  )
  console.log(lines.join("\n"))

  if (!onlyTable) await fairness(gateway, () => spawn("./load.ts"), ROUNDS, LATENCY_SECONDS * 2)

  for (const child of children) child.send("stop")
  if (!onlyTable) await embeddingsStall()
  await Promise.all(children.map((child) => child.exitCode !== null ? null : new Promise((r) => child.once("exit", r))))
  clearTimeout(deadline)
  if (!onlyTable) await retrievalWithin(600_000)
}

/** A bench with a time limit of its own (retrieval: the exact vector scan at 100,000 chunks takes seconds a search). */
const within = (ms: number, name: string, bench: () => Promise<void>) => {
  clearTimeout(deadline)
  const limit = setTimeout(() => {
    console.error(`bench: ${name} over its time limit, stopping`)
    process.exit(1)
  }, ms)
  return bench().finally(() => clearTimeout(limit))
}

const retrievalWithin = (ms: number) => within(ms, "retrieval", retrievalBench)

main().catch((error) => {
  console.error(error)
  for (const child of children) child.kill("SIGKILL")
  process.exit(1)
})
