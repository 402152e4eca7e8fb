/**
 * How long a bench server is loaded before it is timed, and the measurement
 * that chose it (`BENCH_ONLY=warmup`): a fresh server's req/s second by
 * second at 50 connections, JSON then streamed, for the bare proxy and the
 * gateway, each second of the gateway beside a second of the bare proxy.
 * The gateway's code is large and V8 optimises it over its first seconds of
 * load (and its pools, leases and prepared statements fill then): on
 * 2026-11-27 its JSON req/s went 678, 1,013, 1,990, 2,186, then 2,000–2,400,
 * the bare proxy's 2,451, 7,860, then 8,600–9,500; streamed, after those
 * eight seconds of JSON, the gateway still went 989, 1,278, 1,533, 1,628.
 * Timed while still ramping, the first round of every run read lowest
 * (docs/performance.md).
 */
import type { ChildProcess } from "node:child_process"
import { type Bodies, type Load, type LoadTarget, loadWith, nextMessage, type StartServer } from "./children.ts"

/** Seconds of load at 50 connections before a server is timed: JSON first, then streamed. */
export const WARM_SECONDS = { json: 5, stream: 4 }

/** Seconds measured one by one in `BENCH_ONLY=warmup`. */
const RAMP_SECONDS = { json: 8, stream: 6 }


/** Loads `server` for `WARM_SECONDS`, JSON then streamed. */
export const warmUp = async (load: Load, server: LoadTarget, bodies: Bodies) => {
  await load(server, bodies.json, 50, WARM_SECONDS.json)
  await load(server, bodies.stream, 50, WARM_SECONDS.stream)
}

export const warmupBench = async (startServer: StartServer, spawnLoader: () => ChildProcess, bodies: Bodies) => {
  const upstream = await startServer(["upstream"])
  const [bare, gateway] = await Promise.all([startServer(["proxy", upstream.url]), startServer([process.env.BENCH_GATEWAY ?? "gateway", upstream.url])])
  const loader = spawnLoader()
  await nextMessage(loader, "ready")
  const load = loadWith(loader)
  const lines = ["", "| second of load, c50 | bare proxy req/s | gateway req/s | gateway ÷ bare |", "|---|---:|---:|---:|"]
  for (const kind of ["json", "stream"] as const) {
    for (let second = 1; second <= RAMP_SECONDS[kind]; second++) {
      const [b, g] = [await load(bare, bodies[kind], 50, 1), await load(gateway, bodies[kind], 50, 1)]
      lines.push(`| ${kind === "json" ? "JSON" : "streamed"} ${second} | ${b.rps.toFixed(0)} | ${g.rps.toFixed(0)} | ${(g.rps / b.rps).toFixed(2)} |`)
    }
  }
  for (const server of [upstream, bare, gateway, { child: loader }]) server.child.send("stop")
  console.log(lines.join("\n"))
}
