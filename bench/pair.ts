/**
 * This checkout against another, interleaved (`BENCH_ONLY=pair
 * BENCH_BASE=<other checkout> npx tsx bench/run.ts`): the same role of
 * bench/servers.ts started from both, behind one upstream, loaded in turn
 * round by round, with each one's req/s, p50 and its main thread's CPU per
 * call (from /proc). On this VM a change worth 10% is lost in the noise of
 * req/s between runs; the CPU per call of two gateways measured in turn is
 * what shows it. The other checkout needs its own `node_modules` (a link to
 * this one's will do). Knobs: BENCH_PAIR_ROLE (`gateway`; or
 * `gateway-unbilled`, `gateway-embedded`), BENCH_PAIR_STREAM=1 (SSE),
 * BENCH_PAIR_BODY=conversation (a long conversation sent again whole,
 * bench/conversation.ts), BENCH_ACCOUNTS=n (calls spread over n accounts, a
 * key each, in turn: many quiet tenants instead of one hot one),
 * BENCH_PAIR_CONNECTIONS (`1,50`), BENCH_ROUNDS, BENCH_SECONDS, and
 * BENCH_PAIR_BASE_NODE_FLAGS (Node flags for the other checkout's servers,
 * e.g. `--max-semi-space-size=16`: one setting against another, same code).
 */
import { type ChildProcess, fork } from "node:child_process"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { withGatewayFlags } from "../src/start/nodeFlags.ts"
import { type Bodies, children, type LoadTarget, loadWith, median, nextMessage, type Server, typescriptLoader, watched } from "./children.ts"
import { conversationBody } from "./conversation.ts"
import { procCpuMicros } from "./processes.ts"
import { warmUp } from "./warmup.ts"

/** CPU µs so far of a process's main thread (its id is the process's). */
const mainThreadMicros = (pid: number) => procCpuMicros(pid, pid)


/** A role of bench/servers.ts started from `checkout` (this one or another). */
export const startFrom = async (checkout: string, args: Array<string>, nodeFlags: Array<string> = []): Promise<Server> => {
  const child = fork(join(checkout, "bench", "servers.ts"), args, {
    // As bench/run.ts starts its servers: with the gateway's Node flags (this checkout's list), unless given others.
    execArgv: withGatewayFlags([...typescriptLoader, ...nodeFlags]),
    cwd: checkout,
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  children.push(child)
  watched(child, `${checkout}: ${args.join(" ")}`)
  return { child, ...await nextMessage<LoadTarget>(child, "ready") }
}

export const pairBench = async (
  here: string,
  spawnLoader: () => ChildProcess,
  bodies: Bodies,
  rounds: number,
  seconds: number
) => {
  const base = process.env.BENCH_BASE
  if (base === undefined || !existsSync(join(base, "bench", "servers.ts"))) {
    throw new Error("BENCH_BASE must name another checkout of this repository (with node_modules)")
  }
  const role = process.env.BENCH_PAIR_ROLE ?? "gateway"
  const stream = process.env.BENCH_PAIR_STREAM === "1"
  const conversation = process.env.BENCH_PAIR_BODY === "conversation"
  const body = conversation ? conversationBody(stream) : stream ? bodies.stream : bodies.json
  const connections = (process.env.BENCH_PAIR_CONNECTIONS ?? "1,50").split(",").map(Number)
  const upstream = await startFrom(here, ["upstream"])
  const baseFlags = process.env.BENCH_PAIR_BASE_NODE_FLAGS?.split(" ").filter(Boolean) ?? []
  const targets = {
    base: await startFrom(base, [role, upstream.url], baseFlags),
    here: await startFrom(here, [role, upstream.url])
  }
  const loader = spawnLoader()
  await nextMessage(loader, "ready")
  const load = loadWith(loader)
  const run = async (target: Server, concurrency: number, runSeconds: number) => {
    const before = mainThreadMicros(target.child.pid!)
    const result = await load(target, body, concurrency, runSeconds)
    return { result, cpu: (mainThreadMicros(target.child.pid!) - before) / Math.max(1, result.requests) }
  }
  // Both start cold: each is warmed as the targets' servers are (bench/warmup.ts), not counted.
  for (const target of Object.values(targets)) await warmUp(load, target, bodies)
  const measured = new Map<string, Array<{ rps: number; p50: number; cpu: number }>>()
  for (let round = 0; round < rounds; round++) {
    for (const concurrency of connections) {
      for (const [name, target] of Object.entries(targets)) {
        const { cpu, result } = await run(target, concurrency, seconds)
        const key = `${concurrency}|${name}`
        measured.set(key, [...(measured.get(key) ?? []), { rps: result.rps, p50: result.p50, cpu }])
      }
    }
  }
  for (const server of [upstream, ...Object.values(targets), { child: loader }]) server.child.send("stop")
  const lines = [
    `| connections | checkout | req/s, each round | median | p50 ms (median) | main thread CPU µs/call, each round | median |`,
    "|---:|---|---|---:|---:|---|---:|"
  ]
  for (const [key, runs] of measured) {
    const [concurrency, name] = key.split("|")
    lines.push(
      `| ${concurrency} | ${name === "base" ? base : "this one"} | ${runs.map((r) => r.rps.toFixed(0)).join(", ")} | ${
        median(runs.map((r) => r.rps)).toFixed(0)
      } | ${median(runs.map((r) => r.p50)).toFixed(2)} | ${runs.map((r) => r.cpu.toFixed(0)).join(", ")} | ${
        median(runs.map((r) => r.cpu)).toFixed(0)
      } |`
    )
  }
  console.log([
    "",
    `${role}, ${stream ? "SSE" : "JSON"}${conversation ? " (a 20-turn conversation)" : ""}, ${rounds} interleaved rounds of ${seconds} s:`,
    ...lines
  ].join("\n"))
}
