/**
 * The two stretches of a call that decide how fast this VM wakes the other
 * processes at one connection (`BENCH_ONLY=path`, docs/performance.md,
 * "After session 29"): a server's work from a request's head to its upstream
 * request, and from the upstream's answer to its own, for the bare proxy and
 * the gateway behind one upstream, at one connection, rounds interleaved.
 * Timed inside each server at Node's socket layer (bench/pathTiming.ts), so
 * the code under test runs as it ships; with them, the two waits between
 * (the upstream's turn, and the load generator's until the next request),
 * so a call's whole cycle is accounted for. A virtual CPU left idle past ~150 µs
 * wakes ~60 µs later (BENCH_ONLY=wakeups): the first stretch leaves the
 * upstream's CPU idle that long, the second the load generator's. With
 * `BENCH_BASE=<other checkout>` the other checkout's gateway is timed too, in
 * the same rounds: a change to the hot path against the code before it.
 */
import type { ChildProcess } from "node:child_process"
import { type Bodies, loadWith, median, nextMessage, type Server, type StartServer } from "./children.ts"
import { startFrom } from "./pair.ts"
import { warmUp } from "./warmup.ts"

type Path = {
  readonly toUpstreamMicros: number
  readonly toCallerMicros: number
  readonly atUpstreamMicros: number
  readonly toNextRequestMicros: number
}
type Round = Path & { readonly p50: number }

const BASE = "gateway of BENCH_BASE"

/**
 * This gateway less the other checkout's, round by round (both measured within seconds of each
 * other), then the median: the phase moves a stretch by a hundred µs within a run, a pair's
 * difference by far less.
 */
const pairedLines = (here: ReadonlyArray<Round> | undefined, base: ReadonlyArray<Round> | undefined) => {
  if (here === undefined || base === undefined) return []
  const less = (of: (round: Round) => number) => {
    const differences = here.map((round, i) => of(round) - of(base[i]!))
    const sign = (value: number) => (value > 0 ? "+" : "")
    return `**${sign(median(differences))}${median(differences).toFixed(0)}** (${differences.map((d) => `${sign(d)}${d.toFixed(0)}`).join(", ")})`
  }
  return [`| this gateway less BENCH_BASE's, round by round | ${less((r) => r.toUpstreamMicros)} | ${less((r) => r.atUpstreamMicros)} | ${
    less((r) => r.toCallerMicros)
  } | ${less((r) => r.toNextRequestMicros)} | ${less((r) => r.p50 * 1000)} µs |`]
}

export const pathBench = async (
  startServer: StartServer,
  spawnLoader: () => ChildProcess,
  bodies: Bodies,
  rounds: number,
  seconds: number
) => {
  // Every server started from here (bench/servers.ts) times its calls' paths: they inherit this.
  process.env.BENCH_PATH_TIMING = "1"
  const upstream = await startServer(["upstream"])
  const servers: Record<string, Server> = {
    "bare proxy": await startServer(["proxy", upstream.url]),
    gateway: await startServer([process.env.BENCH_GATEWAY ?? "gateway", upstream.url], process.env.BENCH_GATEWAY_FLAGS?.split(" ").filter(Boolean))
  }
  const base = process.env.BENCH_BASE
  if (base !== undefined) servers[BASE] = await startFrom(base, ["gateway", upstream.url])
  const loader = spawnLoader()
  await nextMessage(loader, "ready")
  const load = loadWith(loader)
  // Timed warm, as the targets are (bench/warmup.ts); what the warm-up measured is dropped.
  for (const server of Object.values(servers)) {
    await warmUp(load, server, bodies)
    server.child.send("path")
    await nextMessage<Path>(server.child, "path")
  }
  const measured = new Map<string, Array<Round>>()
  for (let round = 0; round < rounds; round++) {
    // Every other round in reverse: the server loaded right after another one runs a little slower.
    const order = round % 2 === 0 ? Object.entries(servers) : Object.entries(servers).reverse()
    for (const [name, server] of order) {
      const { p50 } = await load(server, bodies.json, 1, seconds)
      server.child.send("path")
      measured.set(name, [...(measured.get(name) ?? []), { ...await nextMessage<Path>(server.child, "path"), p50 }])
    }
  }
  for (const server of [upstream, ...Object.values(servers), { child: loader }]) server.child.send("stop")
  const micros = (values: Array<number>) => `**${median(values).toFixed(0)}** (${values.map((v) => v.toFixed(0)).join(", ")})`
  console.log([
    "",
    `One connection, ${rounds} interleaved rounds of ${seconds} s; medians of each round's calls, then of the rounds:`,
    "| server | request's head → upstream request, µs | upstream request → its answer read, µs | upstream's answer → its own, µs | its answer → the next request's head, µs | p50 to the last byte, ms |",
    "|---|---:|---:|---:|---:|---:|",
    ...[...measured].map(([name, runs]) =>
      `| ${name} | ${micros(runs.map((r) => r.toUpstreamMicros))} | ${micros(runs.map((r) => r.atUpstreamMicros))} | ${
        micros(runs.map((r) => r.toCallerMicros))
      } | ${micros(runs.map((r) => r.toNextRequestMicros))} | ${median(runs.map((r) => r.p50)).toFixed(3)} |`
    ),
    ...pairedLines(measured.get("gateway"), measured.get(BASE))
  ].join("\n"))
}
