/**
 * What call records cost (`BENCH_ONLY=records npm run bench`): JSON and
 * streamed chat at 32 connections against the gateway as shipped and against
 * the same gateway keeping no call records (`CallStatsNone`), each in its own
 * process in front of the same fake upstream, rounds interleaved; prints the
 * req/s of each and recorded ÷ unrecorded per round (goal: within 10%).
 */
import type { ChildProcess } from "node:child_process"
import { type Bodies, loadWith, median, nextMessage, type Server, type StartServer } from "./children.ts"


export const recordsBench = async (
  startServer: StartServer,
  spawnLoader: () => ChildProcess,
  bodies: Bodies,
  rounds: number,
  seconds: number
) => {
  const upstream = await startServer(["upstream"])
  const [recorded, unrecorded] = await Promise.all([
    startServer(["gateway", upstream.url]),
    startServer(["gateway-unrecorded", upstream.url])
  ])
  const loader = spawnLoader()
  await nextMessage(loader, "ready")
  const run = loadWith(loader)
  const load = async (target: Server, body: string, runSeconds: number) => {
    const result = await run(target, body, 32, runSeconds)
    if (result.errors > 0) throw new Error(`${result.errors} failed requests`)
    return result.rps
  }
  const lines: Array<string> = []
  for (const mode of ["json", "stream"] as const) {
    await load(recorded, bodies[mode], 1.5)
    await load(unrecorded, bodies[mode], 1.5)
    const ratios: Array<number> = []
    const rps = { recorded: [] as Array<number>, unrecorded: [] as Array<number> }
    for (let round = 0; round < rounds; round++) {
      rps.recorded.push(await load(recorded, bodies[mode], seconds))
      rps.unrecorded.push(await load(unrecorded, bodies[mode], seconds))
      ratios.push(rps.recorded.at(-1)! / rps.unrecorded.at(-1)!)
    }
    lines.push(
      `| ${mode}, 32 connections | ${median(rps.recorded).toFixed(0)} | ${median(rps.unrecorded).toFixed(0)} | ` +
        `**${median(ratios).toFixed(2)}** (${ratios.map((r) => r.toFixed(2)).join(", ")}) |`
    )
  }
  for (const server of [upstream, recorded, unrecorded, { child: loader }]) server.child.send("stop")
  console.log([
    "Call records' cost, req/s (medians of interleaved rounds):",
    "| load | with records | without | **with ÷ without** (each round) |",
    "|---|---|---|---|",
    ...lines
  ].join("\n"))
}
