/**
 * `BENCH_ONLY=allocation`: what a billed JSON call allocates in the gateway,
 * at 50 connections: a sampling heap profile of the gateway process while it
 * is loaded (bench/heapSampling.ts), divided by the calls served, in all and
 * by source file. Freed objects count: they are what the garbage collector
 * works through, and in session 23 the bytes a call allocated predicted its
 * CPU better than its count of Effect operations (docs/performance.md).
 * `BENCH_GATEWAY=gateway-unbilled` measures the gateway billing nothing instead, `BENCH_STREAM=1`
 * streamed calls (20 frames each), `BENCH_CONNECTIONS=1` one connection instead of 50, and
 * `BENCH_CPU_PROF=<dir>` also writes the gateway's CPU profile there, `BENCH_HEAP_FILE=<file>` the raw
 * heap profile (`.heapprofile`), and `BENCH_HEAP_SURVIVORS=1` counts only what outlives the young
 * generation (bench/heapSampling.ts).
 */
import type { ChildProcess } from "node:child_process"
import { cpuProfileFlags, loadWith, nextMessage, type StartServer } from "./children.ts"

/** Files listed: the rest are summed on one line. */
const LISTED = 25

export const allocationBench = async (startServer: StartServer, spawnLoader: () => ChildProcess, body: string, seconds: number) => {
  const upstream = await startServer(["upstream"])
  const gateway = await startServer([process.env.BENCH_GATEWAY ?? "gateway", upstream.url], cpuProfileFlags)
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
  const loader = spawnLoader()
  await nextMessage(loader, "ready")
  const run = loadWith(loader)
  const load = (runSeconds: number) => run(gateway, body, connections, runSeconds)
  await load(2) // warm: compiled code and filled caches, not start-up, are measured
  gateway.child.send("heap-start")
  await nextMessage(gateway.child, "heapStarted")
  const { requests, rps } = await load(seconds)
  gateway.child.send("heap-stop")
  const { byCaller, byFile, bytes } = await nextMessage<{
    bytes: number
    byFile: Array<[string, number]>
    byCaller: Array<[string, number]>
  }>(gateway.child, "heap")
  for (const server of [upstream, gateway, { child: loader }]) server.child.send("stop")
  const perCall = (n: number) => (n / Math.max(1, requests) / 1024).toFixed(1)
  const table = (heading: string, rows: Array<[string, number]>) => {
    const rest = rows.slice(LISTED).reduce((sum, [, n]) => sum + n, 0)
    return [
      "",
      `| ${heading} | KiB a call | share |`,
      "|---|---:|---:|",
      ...rows.slice(0, LISTED).map(([name, n]) => `| ${name} | ${perCall(n)} | ${((100 * n) / bytes).toFixed(1)}% |`),
      `| the rest | ${perCall(rest)} | ${((100 * rest) / bytes).toFixed(1)}% |`
    ]
  }
  console.log([
    "",
    `Allocated per ${process.env.BENCH_STREAM === "1" ? "streamed" : "JSON"} call, ${connections} connection${connections === 1 ? "" : "s"}, ${seconds} s (${requests} calls, ${rps.toFixed(0)} req/s while sampled): **${perCall(bytes)} KiB**`,
    ...table("file or package", byFile),
    ...table("nearest function of ours on the stack", byCaller)
  ].join("\n"))
}
