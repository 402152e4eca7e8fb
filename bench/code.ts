/**
 * `BENCH_ONLY=code`: how much code a JSON call runs, in the bare proxy and in
 * the gateway, at one connection: V8's precise coverage with call counts in
 * each server while it is loaded (bench/codeCoverage.ts), divided by the
 * calls served. Per call: the functions that ran (a function that ran on a
 * tenth of the calls counts a tenth), the calls made to them, and their
 * source's length. At one connection a call's code comes back cold from the
 * last call's, and in a slow phase of this VM the time of a stretch follows
 * how much code it runs, not which (docs/performance.md, "After session 35"):
 * this is the measure of "half the code a call". `BENCH_CODE_FILE=<file or
 * package>` also lists that row's functions in each server; with
 * `BENCH_BASE=<other checkout>` (one with bench/codeCoverage.ts, from session
 * 37 on) that checkout's gateway is counted too; `BENCH_CODE_DUMP=<file>`
 * writes every server's coverage there as JSON, to compare in any detail.
 */
import type { ChildProcess } from "node:child_process"
import { writeFileSync } from "node:fs"
import { type Bodies, loadWith, nextMessage, type Server, type StartServer } from "./children.ts"
import { startFrom } from "./pair.ts"
import type { FileCode } from "./codeCoverage.ts"
import { warmUp } from "./warmup.ts"

/** Files listed for the gateway: the rest are summed on one line. */
const LISTED = 25

interface PerCall {
  readonly functions: number
  readonly calls: number
  readonly kib: number
}

const perCall = (code: FileCode, requests: number): PerCall => {
  let functions = 0
  let calls = 0
  let bytes = 0
  for (const run of code.runs) {
    const share = Math.min(1, run.calls / requests)
    functions += share
    calls += run.calls / requests
    bytes += share * run.bytes
  }
  return { functions, calls, kib: bytes / 1024 }
}

const sum = (rows: ReadonlyArray<PerCall>): PerCall =>
  rows.reduce((all, row) => ({ functions: all.functions + row.functions, calls: all.calls + row.calls, kib: all.kib + row.kib }), {
    functions: 0,
    calls: 0,
    kib: 0
  })

/** The kinds of code a row belongs to, in the order the kind table lists them. */
const KINDS: ReadonlyArray<readonly [string, (file: string) => boolean]> = [
  ["ours (src, layers, services, plugins)", (file) => /^(src|layers|services|plugins)\//.test(file)],
  ["Effect (effect, @effect/*)", (file) => file === "effect" || file.startsWith("@effect/")],
  ["Node's own (node:*)", (file) => file.startsWith("node:")],
  ["undici", (file) => file === "undici"],
  ["the PostgreSQL driver (pg*)", (file) => file.startsWith("pg")],
  ["the rest", () => true]
]

const line = (name: string, row: PerCall) =>
  `| ${name} | ${row.functions.toFixed(0)} | ${row.calls.toFixed(0)} | ${row.kib.toFixed(1)} |`

/** One file's functions that ran, most calls a call first: with `BENCH_CODE_FILE`, what a row of the table is made of. */
const functionsOf = (file: string, measured: Map<string, Measured>) =>
  [...measured].flatMap(([server, { coverage, requests }]) => {
    const runs = coverage.find(([name]) => name === file)?.[1].runs ?? []
    return [
      "",
      `| ${server}: ${file}, function:offset | calls a call | source bytes |`,
      "|---|---:|---:|",
      ...[...runs].sort((a, b) => b.calls - a.calls).slice(0, 40).map((run) =>
        `| ${run.name} | ${(run.calls / requests).toFixed(2)} | ${run.bytes} |`
      )
    ]
  }).join("\n")

interface Measured {
  readonly coverage: ReadonlyArray<[string, FileCode]>
  readonly requests: number
}

export const codeBench = async (startServer: StartServer, spawnLoader: () => ChildProcess, bodies: Bodies, seconds: number) => {
  const upstream = await startServer(["upstream"])
  const servers: Record<string, Server> = {
    "bare proxy": await startServer(["proxy", upstream.url]),
    gateway: await startServer([process.env.BENCH_GATEWAY ?? "gateway", upstream.url])
  }
  const base = process.env.BENCH_BASE
  if (base !== undefined) servers["gateway of BENCH_BASE"] = await startFrom(base, ["gateway", upstream.url])
  const loader = spawnLoader()
  await nextMessage(loader, "ready")
  const load = loadWith(loader)
  const measured = new Map<string, Measured>()
  for (const [name, server] of Object.entries(servers)) {
    await warmUp(load, server, bodies)
    server.child.send("coverage-start")
    await nextMessage(server.child, "coverageStarted")
    const { requests } = await load(server, bodies.json, 1, seconds)
    server.child.send("coverage-stop")
    measured.set(name, { coverage: await nextMessage(server.child, "coverage"), requests: Math.max(1, requests) })
  }
  for (const server of [upstream, ...Object.values(servers), { child: loader }]) server.child.send("stop")
  const dump = process.env.BENCH_CODE_DUMP
  if (dump !== undefined) writeFileSync(dump, JSON.stringify(Object.fromEntries(measured)))
  const rowsOf = ({ coverage, requests }: Measured) =>
    coverage.map(([file, code]): [string, PerCall] => [file, perCall(code, requests)]).sort((a, b) => b[1].functions - a[1].functions)
  const gateway = rowsOf(measured.get("gateway")!)
  console.log([
    "",
    `The code a JSON call runs, one connection, ${seconds} s each (V8's precise coverage; ` +
    "a function that ran on a share of the calls counts that share):",
    "| server | functions a call | calls a call | KiB of their source a call |",
    "|---|---:|---:|---:|",
    ...[...measured].map(([name, server]) => line(name, sum(rowsOf(server).map(([, row]) => row)))),
    "",
    "| the gateway's code by kind | functions a call | calls a call | KiB of their source a call |",
    "|---|---:|---:|---:|",
    ...KINDS.map(([kind]) =>
      line(kind, sum(gateway.filter(([file]) => KINDS.find(([, holds]) => holds(file))![0] === kind).map(([, row]) => row)))
    ),
    "",
    "| the gateway's file or package | functions a call | calls a call | KiB of their source a call |",
    "|---|---:|---:|---:|",
    ...gateway.slice(0, LISTED).map(([file, row]) => line(file, row)),
    line("the rest", sum(gateway.slice(LISTED).map(([, row]) => row))),
    ...(process.env.BENCH_CODE_FILE !== undefined ? [functionsOf(process.env.BENCH_CODE_FILE, measured)] : [])
  ].join("\n"))
}
