/**
 * Where a call's CPU goes, process by process (`BENCH_ONLY=processes npx tsx
 * bench/run.ts`): JSON chat at 1 and at 50 connections against the gateway,
 * with the CPU each process spent per call — the gateway (every thread: its
 * garbage collector, the embedded database's worker), the fake upstream, the
 * load generator, and, on PostgreSQL (`DATABASE_URL`), the server's own
 * processes (from `/proc`) and its transactions per call (`pg_stat_database`).
 * This is how docs/performance.md found that a call at one connection costs
 * the gateway 2–3 times what it costs at fifty, and what PostgreSQL spends.
 * The same runs against a gateway billing nothing (a no-op ledger), rounds
 * interleaved, with the main thread's CPU apart (its user and system time,
 * from /proc), say what billing adds per call at each load.
 */
import type { ChildProcess } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import pg from "pg"
import { loadWith, nextMessage, type Server, type StartServer } from "./children.ts"


/** CPU µs so far of a process, or of one of its threads, from /proc (user and system, in 1/100 s ticks; 0 without /proc). */
export const procCpuMicros = (pid: number, thread?: number) => {
  try {
    const fields = readFileSync(`/proc/${pid}${thread === undefined ? "" : `/task/${thread}`}/stat`, "utf8").split(") ")[1]!
      .split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return 0
  }
}

/** The PostgreSQL server's processes on this machine (by their command name). */
const postgresPids = () => {
  try {
    return readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number).filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, "utf8").trim().startsWith("postgres")
      } catch {
        return false
      }
    })
  } catch {
    return []
  }
}

export const processesBench = async (
  startServer: StartServer,
  spawnLoader: () => ChildProcess,
  body: string,
  seconds: number
) => {
  const upstream = await startServer(["upstream"])
  const gateway = await startServer(["gateway", upstream.url])
  const unbilled = await startServer(["gateway-unbilled", upstream.url])
  const loader = spawnLoader()
  await nextMessage(loader, "ready")
  const load = loadWith(loader)
  const url = process.env.DATABASE_URL
  const client = url ? new pg.Client({ connectionString: url }) : undefined
  await client?.connect()
  const transactions = async () =>
    client === undefined ? 0 : Number(
      (await client.query<{ n: string }>("SELECT sum(xact_commit + xact_rollback)::text AS n FROM pg_stat_database")).rows[0]!.n
    )
  const stats = async (server: Server) => {
    server.child.send("stats")
    return (await nextMessage<{ cpuMicros: number }>(server.child, "stats")).cpuMicros
  }
  const sample = async (target: Server) => ({
    gateway: await stats(target),
    // The thread that serves every request (its id is the process's).
    main: procCpuMicros(target.child.pid!, target.child.pid!),
    upstream: await stats(upstream),
    loader: procCpuMicros(loader.pid!),
    postgres: postgresPids().reduce((sum, pid) => sum + procCpuMicros(pid), 0),
    transactions: await transactions()
  })
  const run = async (target: Server, concurrency: number, runSeconds: number) => {
    const before = await sample(target)
    const result = await load(target, body, concurrency, runSeconds)
    const after = await sample(target)
    const calls = Math.max(1, result.requests)
    const per = (key: keyof typeof before) => (after[key] - before[key]) / calls
    // The sampling's own statement (one per sample) is not the calls'.
    return { result, per, transactionsPerCall: (after.transactions - before.transactions - 1) / calls }
  }
  for (const target of [gateway, unbilled]) await run(target, 50, 2)
  const lines = [
    `| connections | gateway | req/s | p50 ms | gateway CPU µs/call | its main thread | upstream | load generator | PostgreSQL server | PostgreSQL transactions/call |`,
    "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  ]
  for (const concurrency of [1, 50, 1, 50]) {
    for (const [name, target] of [["billed", gateway], ["unbilled", unbilled]] as const) {
      const { per, result, transactionsPerCall } = await run(target, concurrency, seconds)
      lines.push(
        `| ${concurrency} | ${name} | ${result.rps.toFixed(0)} | ${result.p50.toFixed(2)} | ${per("gateway").toFixed(0)} | ` +
          `${per("main").toFixed(0)} | ${per("upstream").toFixed(0)} | ${per("loader").toFixed(0)} | ${
            url ? per("postgres").toFixed(0) : "(embedded)"
          } | ${url ? transactionsPerCall.toFixed(2) : "(embedded)"} |`
      )
    }
  }
  await client?.end()
  for (const server of [upstream, gateway, unbilled, { child: loader }]) server.child.send("stop")
  console.log([
    "",
    `CPU per JSON call, process by process (${seconds} s per run; ${url ? "PostgreSQL" : "the embedded database"}):`,
    ...lines,
    "",
    "The gateway's and the upstream's CPU are their own process.cpuUsage(); the main thread's, the load generator's and PostgreSQL's come from /proc.",
    "The unbilled gateway is the same app with a no-op ledger (bench/noopLedger.ts): the difference is what billing costs."
  ].join("\n"))
}
