/**
 * Billing cost benchmark: billed chat calls per second on ONE hot account
 * against real PostgreSQL, as a ratio to unbilled calls in the same run.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/billing.ts
 *
 * Two gateway processes share one fresh database (created and dropped here):
 * - billed: the app as shipped (`HttpLive` + `Core`, so `LedgerPg`);
 * - unbilled: the same composition with the `Ledger` replaced by a no-op
 *   (`NoopLedger` below, in `coreWith` from `layers/Core.ts`).
 * Both serve the offline sandbox model (`svc/pro`, fixed `max_tokens`) to one
 * account's key at 32 connections, driven by `load.ts` in its own process.
 * Rounds are interleaved (billed, unbilled; BENCH_ROUNDS × BENCH_SECONDS).
 * Afterwards the account's balance must have dropped by exactly the sum of
 * its receipts, and there must be one receipt per billed 200.
 *
 * Each gateway process also counts its own PostgreSQL traffic (pg's
 * `Client.query` and `Pool.connect` are wrapped: statements, their wall time,
 * pool waits, statements by kind), and the
 * parent samples `pg_stat_activity` and PostgreSQL's CPU time (/proc), so the
 * table says where a billed call's extra time goes.
 * BENCH_CPU_PROF=<dir> writes a `--cpu-prof` profile of the billed process.
 */
import { type ChildProcess, execSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { constants as perfConstants, monitorEventLoopDelay, performance, PerformanceObserver } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { HttpServer } from "@effect/platform"
import { NoopLedger } from "./noopLedger.ts"
import { Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import pg from "pg"
import { loadConfig } from "../layers/platform/ConfigLive.ts"
import { Core, coreWith } from "../layers/Core.ts"
import { AppConfig } from "../services/Config.ts"
import { HttpLive } from "../src/Server.ts"
import { withGatewayFlags } from "../src/start/nodeFlags.ts"
import { freshDatabase } from "../test/support/database.ts"
import { children, cpuProfileFlags, loadWith, median, nextMessage, spawnChild } from "./children.ts"

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const WARMUP_SECONDS = 3
const CONCURRENCY = 32
const MAX_TOKENS = 16
const CREDIT_USD = "1000"

const body = JSON.stringify({
  model: "svc/pro",
  max_tokens: MAX_TOKENS,
  messages: [
    { role: "system", content: "You are terse." },
    { role: "user", content: "Say hello to the billing benchmark in a few words, please" }
  ]
})

type Target = "billed" | "unbilled"

// ---------------------------------------------------------------------------
// The no-op ledger and the variant composition (the unbilled process).
// ---------------------------------------------------------------------------

/** `layers/Core.ts` with another Ledger layer in place of `LedgerPg` (keep in step with Core.ts). */
// ---------------------------------------------------------------------------
// In a gateway process: count what goes to PostgreSQL.
// ---------------------------------------------------------------------------

interface DbCounters {
  queries: number
  queryMs: number
  connects: number
  connectWaitMs: number
  byKind: Record<string, { n: number; ms: number }>
}

const counters: DbCounters = {
  queries: 0,
  queryMs: 0,
  connects: 0,
  connectWaitMs: 0,
  byKind: {}
}

const kindOf = (text: string) => {
  const t = text.replace(/\s+/g, " ").trim()
  if (/^WITH RECURSIVE input AS/i.test(t)) return "reserve batch (1 stmt)"
  if (/^WITH input AS/i.test(t)) return "settle batch (1 stmt)"
  if (/^WITH reopened AS/i.test(t)) return "settle after the sweeper (fallback)"
  if (/^SELECT \* FROM api_keys/i.test(t)) return "auth: key lookup"
  return t.split(" ").slice(0, 3).join(" ")
}

const instrumentPg = () => {
  const query = pg.Client.prototype.query as (...args: Array<any>) => any
  pg.Client.prototype.query = function(this: object, ...args: Array<any>) {
    const text: string = typeof args[0] === "string" ? args[0] : args[0]?.text ?? ""
    if (text === "") return query.apply(this, args)
    const kind = kindOf(text)
    const t0 = performance.now()
    const answered = () => {
      const t1 = performance.now()
      counters.queries += 1
      counters.queryMs += t1 - t0
      const entry = (counters.byKind[kind] ??= { n: 0, ms: 0 })
      entry.n += 1
      entry.ms += t1 - t0
    }
    const callback = args[args.length - 1]
    if (typeof callback === "function") {
      args[args.length - 1] = (...result: Array<unknown>) => {
        answered()
        return callback(...result)
      }
      return query.apply(this, args)
    }
    // A query object with its own callback, as the gateway's pool sends its statements (layers/storage/preparingClient.ts).
    const submitted = args[0]
    if (typeof submitted?.callback === "function") {
      const own = submitted.callback
      submitted.callback = (...result: Array<unknown>) => {
        answered()
        return own(...result)
      }
      return query.apply(this, args)
    }
    // The promise form: timed when it settles.
    const result = query.apply(this, args)
    if (typeof result?.then === "function") result.then(answered, answered)
    return result
  } as any
  const connect = pg.Pool.prototype.connect as (...args: Array<any>) => any
  pg.Pool.prototype.connect = function(this: object, ...args: Array<any>) {
    const callback = args[0]
    if (typeof callback !== "function") return connect.apply(this, args)
    const t0 = performance.now()
    return connect.call(this, (...result: Array<unknown>) => {
      counters.connects += 1
      counters.connectWaitMs += performance.now() - t0
      return callback(...result)
    })
  } as any
}

const gatewayProcess = async (target: Target) => {
  instrumentPg()
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-billing-"))
  const config = await Effect.runPromise(
    loadConfig({
      DATABASE_URL: process.env.BENCH_DATABASE_URL!,
      PORT: "0",
      HOST: "127.0.0.1",
      SVC_ADMIN_KEY: process.env.BENCH_ADMIN_KEY!,
      SVC_CONFIG: ""
    }, dir)
  )
  const core = target === "billed" ? Core : coreWith(NoopLedger)
  const runtime = ManagedRuntime.make(
    HttpLive.pipe(
      Layer.provideMerge(core),
      Layer.provide(Layer.succeed(AppConfig, config)),
      Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
    )
  )
  const server = await runtime.runPromise(HttpServer.HttpServer)
  const { port } = server.address as HttpServer.TcpAddress
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await Promise.race([runtime.dispose(), new Promise((resolve) => setTimeout(resolve, 5000))])
    rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  }
  // How long calls wait for the event loop, and for the collector's pauses, between two `stats`.
  const loopDelay = monitorEventLoopDelay({ resolution: 1 })
  loopDelay.enable()
  const gc = { pauseMs: 0, majors: 0 }
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gc.pauseMs += entry.duration
      if ((entry as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) gc.majors += 1
    }
  }).observe({ entryTypes: ["gc"] })
  process.on("message", (message) => {
    if (message === "stop") return stop()
    if (message === "stats") {
      const { user, system } = process.cpuUsage()
      const loop = { p50: loopDelay.percentile(50) / 1e6, p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 }
      loopDelay.reset()
      process.send!({ stats: { cpuMicros: user + system, db: structuredClone(counters), loop, gc: { ...gc } } })
    }
  })
  process.on("disconnect", stop)
  process.send!({ ready: { url: `http://127.0.0.1:${port}` } })
}

// ---------------------------------------------------------------------------
// The parent: databases, processes, rounds, table, check.
// ---------------------------------------------------------------------------


const spawn = spawnChild

/** CPU time of every PostgreSQL process so far, in µs (exited backends are in the postmaster's children time). */
const ticks = (() => {
  try {
    return Number(execSync("getconf CLK_TCK").toString().trim()) || 100
  } catch {
    return 100
  }
})()
const postgresCpuMicros = () => {
  let total = 0
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const close = stat.lastIndexOf(")")
      if (!stat.slice(stat.indexOf("(") + 1, close).startsWith("postgres")) continue
      const fields = stat.slice(close + 2).split(" ")
      // fields[0] is the state (field 3): utime, stime, cutime, cstime are fields 14-17.
      total += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
    } catch {
      // Gone meanwhile.
    }
  }
  return (total / ticks) * 1e6
}

interface Stats {
  cpuMicros: number
  db: DbCounters
  /** Event-loop delay since the last `stats`, ms. */
  loop: { p50: number; p99: number; max: number }
  /** The collector's pauses so far: ms, and how many were full (mark-compact). */
  gc: { pauseMs: number; majors: number }
}

const main = async () => {
  const began = Date.now()
  if (!process.env.DATABASE_URL) throw new Error("set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test)")
  const database = await freshDatabase()
  const databaseUrl = database.env.DATABASE_URL!
  const databaseName = new URL(databaseUrl).pathname.slice(1)
  const monitor = new pg.Client({ connectionString: databaseUrl })
  let dropped = false
  const cleanup = async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
    await monitor.end().catch(() => {})
    if (!dropped) {
      dropped = true
      await database.drop().catch((error) => console.error("bench: could not drop the database", error))
    }
  }
  // The whole run is bounded: a stuck child must not keep it alive.
  const deadline = setTimeout(() => {
    console.error("bench: over the time limit, stopping")
    cleanup().finally(() => process.exit(1))
  }, 170_000)

  try {
    const adminKey = `admin_${randomBytes(16).toString("hex")}`
    const self = fileURLToPath(import.meta.url)
    const env = { BENCH_DATABASE_URL: databaseUrl, BENCH_ADMIN_KEY: adminKey }
    // One after the other: the first one migrates the database.
    // Both with the gateway's Node flags, as every other bench's servers (src/start/nodeFlags.ts).
    const billedChild = spawn(self, ["gateway", "billed"], env, withGatewayFlags(cpuProfileFlags))
    const billed = await nextMessage<{ url: string }>(billedChild, "ready")
    const unbilledChild = spawn(self, ["gateway", "unbilled"], env, withGatewayFlags([]))
    const unbilled = await nextMessage<{ url: string }>(unbilledChild, "ready")
    const servers: Record<Target, { child: ChildProcess; url: string }> = {
      billed: { child: billedChild, url: billed.url },
      unbilled: { child: unbilledChild, url: unbilled.url }
    }
    console.log(`bench: gateways up in ${((Date.now() - began) / 1000).toFixed(1)} s, database ${databaseName}`)

    // The hot account, through the admin API.
    const admin = async (path: string, payload: unknown) => {
      const response = await fetch(`${billed.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
        body: JSON.stringify(payload)
      })
      if (response.status >= 300) throw new Error(`${path}: ${response.status} ${await response.text()}`)
      return response.json() as Promise<any>
    }
    const account = await admin("/v1/admin/accounts", { name: "bench-hot", credit_usd: CREDIT_USD })
    const { key } = await admin(`/v1/admin/accounts/${account.id}/keys`, { scopes: ["chat"] })
    await monitor.connect()
    const [{ balance_usd: startBalance }] = (await monitor.query(
      "SELECT balance_usd::text FROM accounts WHERE id = $1",
      [account.id]
    )).rows

    // Both must really answer before anything is timed; only the billed one writes a receipt.
    let billedOk = 0
    for (const target of ["billed", "unbilled"] as const) {
      const response = await fetch(`${servers[target].url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body
      })
      const text = await response.text()
      const receiptId = response.headers.get("x-svc-receipt-id") ?? ""
      const expected = target === "billed" ? /^rcpt_(?!noop)/ : /^rcpt_noop/
      if (response.status !== 200 || !text.includes("Sandbox reply") || !expected.test(receiptId)) {
        throw new Error(`${target}: ${response.status} receipt ${receiptId} ${text.slice(0, 300)}`)
      }
      if (target === "billed") billedOk += 1
    }

    const loader = spawn(fileURLToPath(new URL("./load.ts", import.meta.url)), [])
    await nextMessage(loader, "ready")
    const run = loadWith(loader)
    const stats = (child: ChildProcess) => {
      child.send("stats")
      return nextMessage<Stats>(child, "stats")
    }

    /** pg_stat_activity of the bench database, sampled while a run goes on. */
    const sampleActivity = (until: () => boolean) => {
      const samples: Array<{ active: number; idleInTx: number; lockWait: number; walWait: number }> = []
      const done = (async () => {
        while (!until()) {
          const { rows: [row] } = await monitor.query(
            `SELECT count(*) FILTER (WHERE state = 'active')::int AS active,
                    count(*) FILTER (WHERE state LIKE 'idle in transaction%')::int AS "idleInTx",
                    count(*) FILTER (WHERE wait_event_type = 'Lock')::int AS "lockWait",
                    count(*) FILTER (WHERE wait_event_type = 'IO' AND wait_event LIKE 'WAL%'
                                     OR wait_event_type = 'LWLock' AND wait_event LIKE 'WAL%')::int AS "walWait"
               FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
            [databaseName]
          )
          samples.push(row)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      })()
      return { samples, done }
    }

    const load = async (target: Target, seconds: number) => {
      const server = servers[target]
      const before = await stats(server.child)
      const pgBefore = postgresCpuMicros()
      let finished = false
      const activity = sampleActivity(() => finished)
      const result = await run({ url: server.url, key }, body, CONCURRENCY, seconds)
      finished = true
      await activity.done
      const pgAfter = postgresCpuMicros()
      const after = await stats(server.child)
      if (target === "billed") billedOk += result.requests
      const n = Math.max(1, result.requests)
      const byKind: Record<string, { n: number; ms: number }> = {}
      for (const [kind, value] of Object.entries(after.db.byKind)) {
        const prior = before.db.byKind[kind] ?? { n: 0, ms: 0 }
        if (value.n > prior.n) byKind[kind] = { n: value.n - prior.n, ms: value.ms - prior.ms }
      }
      const mean = (f: (s: (typeof activity.samples)[number]) => number) =>
        activity.samples.reduce((sum, s) => sum + f(s), 0) / Math.max(1, activity.samples.length)
      return {
        ...result,
        cpuPerRequest: (after.cpuMicros - before.cpuMicros) / n,
        pgCpuPerRequest: (pgAfter - pgBefore) / n,
        queriesPerRequest: (after.db.queries - before.db.queries) / n,
        dbMsPerRequest: (after.db.queryMs - before.db.queryMs) / n,
        connectsPerRequest: (after.db.connects - before.db.connects) / n,
        connectWaitMsPerRequest: (after.db.connectWaitMs - before.db.connectWaitMs) / n,
        byKind,
        loop: after.loop,
        gcPauseMsPerSecond: (after.gc.pauseMs - before.gc.pauseMs) / seconds,
        gcMajors: after.gc.majors - before.gc.majors,
        active: mean((s) => s.active),
        idleInTx: mean((s) => s.idleInTx),
        lockWait: mean((s) => s.lockWait),
        walWait: mean((s) => s.walWait)
      }
    }
    type Measured = Awaited<ReturnType<typeof load>>

    for (const target of ["billed", "unbilled"] as const) await load(target, WARMUP_SECONDS)
    const runs: Record<Target, Array<Measured>> = { billed: [], unbilled: [] }
    for (let round = 1; round <= ROUNDS; round++) {
      for (const target of ["billed", "unbilled"] as const) runs[target].push(await load(target, SECONDS))
      console.log(`bench: round ${round}/${ROUNDS} done`)
    }

    // Stop the gateways (all settlements finish), then check the money.
    loader.send("stop")
    for (const { child } of Object.values(servers)) child.send("stop")
    await Promise.all(children.map((child) => child.exitCode !== null ? null : new Promise((r) => child.once("exit", r))))
    const { rows: [check] } = await monitor.query(
      `SELECT a.balance_usd::text AS balance,
              ($2::numeric - a.balance_usd)::text AS dropped,
              r.total::text AS receipts_total, r.n AS receipts,
              (SELECT coalesce(-sum(amount_usd), 0) FROM ledger e
                WHERE e.account_id = a.id AND e.kind = 'charge')::text AS charged,
              a.reserved_usd::text AS reserved,
              (SELECT count(*)::int FROM reservations v WHERE v.account_id = a.id AND v.status = 'open') AS open,
              ($2::numeric - a.balance_usd) = r.total AS exact
         FROM accounts a,
              LATERAL (SELECT coalesce(sum(total_usd), 0) AS total, count(*)::int AS n
                         FROM receipts WHERE account_id = a.id) r
        WHERE a.id = $1`,
      [account.id, startBalance]
    )

    // The hot row's table: updates, how many were HOT, and its size (row versions pile up on one page).
    const { rows: [heap] } = await monitor.query(
      `SELECT n_tup_upd::int AS updates, n_tup_hot_upd::int AS hot, n_dead_tup::int AS dead,
              pg_relation_size('accounts')::int AS heap, pg_relation_size('accounts_pkey')::int AS pkey
         FROM pg_stat_user_tables WHERE relname = 'accounts'`
    )

    // The tables.
    const med = (xs: Array<Measured>, f: (m: Measured) => number) => median(xs.map(f))
    const f0 = (x: number) => x.toFixed(0)
    const f1 = (x: number) => x.toFixed(1)
    const f2 = (x: number) => x.toFixed(2)
    const cell = (xs: Array<Measured>) =>
      `${f0(med(xs, (m) => m.rps))} · ${f2(med(xs, (m) => m.p50))} / ${f2(med(xs, (m) => m.p99))} · ${
        f0(med(xs, (m) => m.cpuPerRequest))
      } · ${f0(med(xs, (m) => m.pgCpuPerRequest))}`
    const loopCell = (xs: Array<Measured>) =>
      `${f2(med(xs, (m) => m.loop.p50))} / ${f2(med(xs, (m) => m.loop.p99))} / ${f1(med(xs, (m) => m.loop.max))} · ${
        f1(med(xs, (m) => m.gcPauseMsPerSecond))
      } · ${f1(med(xs, (m) => m.gcMajors))}`
    const perRound = (f: (b: Measured, u: Measured) => number) => runs.billed.map((b, i) => f(b, runs.unbilled[i]!))
    const ratios = perRound((b, u) => b.rps / u.rps)
    const errors = (t: Target) => runs[t].reduce((n, m) => n + m.errors, 0)
    const lines = [
      "",
      `### Billing on one hot account (PostgreSQL), ${CONCURRENCY} connections`,
      "",
      "| | billed (LedgerPg) | unbilled (no-op Ledger) | **billed ÷ unbilled** (each round) |",
      "|---|---|---|---:|",
      `| req/s · p50 / p99 ms · gateway CPU µs/req · PostgreSQL CPU µs/req | ${cell(runs.billed)} | ${
        cell(runs.unbilled)
      } | **${f2(median(ratios))}** (${ratios.map(f2).join(", ")}) |`,
      `| gateway CPU/req, billed ÷ unbilled | | | ${f2(median(perRound((b, u) => b.cpuPerRequest / u.cpuPerRequest)))} |`,
      `| event-loop delay p50 / p99 / max ms · GC pause ms a second · full GCs | ${loopCell(runs.billed)} | ${loopCell(runs.unbilled)} | |`,
      "",
      "Where a call's database time goes (medians over rounds; per request unless noted):",
      "",
      "| | billed | unbilled |",
      "|---|---:|---:|",
      `| statements (round trips) | ${f2(med(runs.billed, (m) => m.queriesPerRequest))} | ${
        f2(med(runs.unbilled, (m) => m.queriesPerRequest))
      } |`,
      `| wall ms in statements (summed, send → answer) | ${f2(med(runs.billed, (m) => m.dbMsPerRequest))} | ${
        f2(med(runs.unbilled, (m) => m.dbMsPerRequest))
      } |`,
      `| pool checkouts · ms waiting for a connection (pool max 10) | ${
        f2(med(runs.billed, (m) => m.connectsPerRequest))
      } · ${f2(med(runs.billed, (m) => m.connectWaitMsPerRequest))} | ${
        f2(med(runs.unbilled, (m) => m.connectsPerRequest))
      } · ${f2(med(runs.unbilled, (m) => m.connectWaitMsPerRequest))} |`,
      `| backends active · idle in transaction · waiting on a lock · on WAL (mean of 100 ms samples) | ${
        [f1(med(runs.billed, (m) => m.active)), f1(med(runs.billed, (m) => m.idleInTx)), f1(med(runs.billed, (m) => m.lockWait)), f1(med(runs.billed, (m) => m.walWait))].join(" · ")
      } | ${
        [f1(med(runs.unbilled, (m) => m.active)), f1(med(runs.unbilled, (m) => m.idleInTx)), f1(med(runs.unbilled, (m) => m.lockWait)), f1(med(runs.unbilled, (m) => m.walWait))].join(" · ")
      } |`
    ]
    const kinds = [...new Set(runs.billed.flatMap((m) => Object.keys(m.byKind)))]
    for (const kind of kinds) {
      const per = (m: Measured) => m.byKind[kind] ?? { n: 0, ms: 0 }
      lines.push(
        `| · ${kind}: count per 1,000 calls · mean ms | ${f1(med(runs.billed, (m) => 1000 * per(m).n / Math.max(1, m.requests)))} · ${
          f2(med(runs.billed, (m) => per(m).ms / Math.max(1, per(m).n)))
        } | ${
          runs.unbilled.some((m) => per(m).n > 0)
            ? `${f1(med(runs.unbilled, (m) => 1000 * per(m).n / Math.max(1, m.requests)))} · ${
              f2(med(runs.unbilled, (m) => per(m).ms / Math.max(1, per(m).n)))
            }`
            : "–"
        } |`
      )
    }
    const rounds = (t: Target) => runs[t].map((m) => `${f0(m.rps)} (PostgreSQL ${f0(m.pgCpuPerRequest)} µs/req)`).join(", ")
    lines.push(
      "",
      `Per round req/s: billed ${rounds("billed")}; unbilled ${rounds("unbilled")}. ` +
        `accounts table after the run: ${heap.updates} updates (${heap.hot} HOT), ${heap.dead} dead row versions, ` +
        `heap ${heap.heap} B, primary key ${heap.pkey} B (one live row).`,
      "",
      `Money check: balance ${startBalance} → ${check.balance} USD, dropped by ${check.dropped}; ` +
        `${check.receipts} receipts total ${check.receipts_total} (charge entries ${check.charged}); ` +
        `reserved ${check.reserved}, open reservations ${check.open}; billed 200s ${billedOk}. ` +
        `**${check.exact && check.receipts === billedOk && Number(check.open) === 0 ? "OK" : "MISMATCH"}**: ` +
        "drop = sum of receipts" + (check.exact ? "" : " (FAILED)") +
        `, one receipt per billed 200${check.receipts === billedOk ? "" : " (FAILED)"}.`,
      "",
      `Medians of ${ROUNDS} interleaved rounds of ${SECONDS} s (svc/pro on the sandbox, max_tokens ${MAX_TOKENS}, ` +
        `one account's key). Failed requests: billed ${errors("billed")}, unbilled ${errors("unbilled")}. ` +
        `PostgreSQL CPU is the whole server's (same machine). Run took ${((Date.now() - began) / 1000).toFixed(0)} s.`,
      "",
      "Reproduce: `DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/billing.ts` " +
        "(env: BENCH_SECONDS, BENCH_ROUNDS, BENCH_CPU_PROF=<dir>)."
    )
    console.log(lines.join("\n"))
    const ok = check.exact && check.receipts === billedOk && Number(check.open) === 0
    await cleanup()
    clearTimeout(deadline)
    if (!ok) process.exitCode = 1
  } catch (error) {
    await cleanup()
    clearTimeout(deadline)
    throw error
  }
}

if (process.argv[2] === "gateway") {
  // Never outlive a stuck benchmark.
  setTimeout(() => process.exit(1), 200_000).unref()
  gatewayProcess(process.argv[3] === "billed" ? "billed" : "unbilled").catch((error) => {
    console.error(error)
    process.exit(1)
  })
} else {
  main().catch((error) => {
    console.error(error)
    process.exit(1)
  })
}
