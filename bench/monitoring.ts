/**
 * Monitoring at depth (`BENCH_ONLY=monitoring npm run bench`): one account
 * with 1,000,000 events and 1,000,000 per-call records (30 days of hour
 * buckets and 6 hours of minute buckets beside them), on PGlite and, when
 * `DATABASE_URL` names one, on a PostgreSQL server; then the latency of a
 * `GET /v1/logs` page (100 events) at depth 0, 10,000 and 999,900 — a cursor
 * page costs what the first costs — and of `GET /v1/monitoring` over 1 hour
 * and 30 days; then log pages read from receipts (bench/derivedLogs.ts). Knobs:
 * BENCH_MONITORING_ROWS (default 1,000,000), BENCH_MONITORING_RECEIPTS (200,000).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { loadConfig } from "../layers/platform/ConfigLive.ts"
import { DatabaseLive } from "../layers/storage/Database.ts"
import { MigrationsLive } from "../layers/storage/Migrations.ts"
import { eventCursorOf } from "../src/api/monitoringParams.ts"
import { AppConfig } from "../services/Config.ts"
import { TEMPLATE_ENV } from "../test/support/database.ts"
import { startGateway, type TestGateway } from "../test/support/gateway.ts"
import { derivedLogHeader, derivedLogRows } from "./derivedLogs.ts"

const ROWS = Number(process.env.BENCH_MONITORING_ROWS ?? 1_000_000)
/** Receipts for the log pages read from them (bench/derivedLogs.ts). */
const RECEIPTS = Number(process.env.BENCH_MONITORING_RECEIPTS ?? 200_000)
const TIMED = 30

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!

export const timed = async (ask: () => Promise<{ status: number }>) => {
  // A warm-up, which may also meet a connection the server closed while the seed ran (and is retried).
  await ask().catch(() => ask())
  const times: Array<number> = []
  for (let i = 0; i < TIMED; i++) {
    const started = performance.now()
    const answer = await ask()
    times.push(performance.now() - started)
    if (answer.status !== 200) throw new Error(`answered ${answer.status}`)
  }
  times.sort((a, b) => a - b)
  return `${percentile(times, 0.5).toFixed(1)} / ${percentile(times, 0.95).toFixed(1)}`
}

/** Seeds the account's history in SQL, in batches so no statement grows without bound. */
const seed = async (gateway: TestGateway, accountId: string) => {
  const batch = 100_000
  for (let start = 0; start < ROWS; start += batch) {
    const end = Math.min(ROWS, start + batch)
    await gateway.query(
      `INSERT INTO events (id, type, account_id, request_id, data, created_at)
       SELECT 'evt_bench_' || i, 'provider.route', $1, 'req_bench_' || i, '{"model":"svc/bench","attempt":1}'::jsonb,
              now() - make_interval(secs => ($2 - i) * 2)
       FROM generate_series($3::int, $4::int) AS i`,
      [accountId, ROWS, start, end - 1]
    )
    await gateway.query(
      `INSERT INTO call_records (request_id, account_id, key_id, endpoint, status, latency_ms, input_tokens, output_tokens,
                                 spend_usd, ended_at)
       SELECT 'req_bench_' || i, $1, 'key_bench', '/v1/chat/completions', 200, 20 + i % 50, 100, 20, 0.000010000,
              now() - make_interval(secs => ($2 - i) * 2)
       FROM generate_series($3::int, $4::int) AS i`,
      [accountId, ROWS, start, end - 1]
    )
  }
  const buckets = (granularity: string, count: number, step: string) =>
    gateway.query(
      `INSERT INTO call_stats (account_id, granularity, bucket, instance, requests, server_errors, errors, latency, ttft,
                               input_tokens, output_tokens, spend_usd)
       SELECT $1, $2, date_trunc($3, now()) - (i * $4::interval), 'bench', 1400, 3, '{"upstream_error":3}',
              '{"17":700,"18":500,"20":200}', '{"12":100}', 140000, 28000, 0.014
       FROM generate_series(0, $5::int - 1) AS i`,
      [accountId, granularity, granularity, step, count]
    )
  await buckets("hour", 30 * 24, "1 hour")
  await buckets("minute", 6 * 60, "1 minute")
}

const measure = async (gateway: TestGateway, label: string) => {
  const { id, key } = await gateway.account({ credit: "1", scopes: ["monitoring"] })
  await seed(gateway, id)
  await gateway.query("ANALYZE")
  const cursorAt = async (depth: number) => {
    const [row] = await gateway.query<{ xid: string; seq: string }>(
      "SELECT xid::text AS xid, seq::text AS seq FROM events WHERE account_id = $1 ORDER BY xid DESC, seq DESC OFFSET $2 LIMIT 1",
      [id, depth - 1]
    )
    return eventCursorOf({ xid: BigInt(row!.xid), seq: BigInt(row!.seq) })
  }
  const page = (cursor: string | null) => () =>
    gateway.request("GET", `/v1/logs?limit=100${cursor === null ? "" : `&cursor=${cursor}`}`, { key })
  const deep = await cursorAt(ROWS - 100)
  const middle = await cursorAt(Math.min(10_000, ROWS - 100))
  return `| ${label} | ${await timed(page(null))} | ${await timed(page(middle))} | ${await timed(page(deep))} | ${await timed(() =>
    gateway.request("GET", "/v1/monitoring?window=1h", { key })
  )} | ${await timed(() => gateway.request("GET", "/v1/monitoring?window=30d", { key }))} |`
}

export const monitoringBench = async () => {
  const serverUrl = process.env.DATABASE_URL
  delete process.env.DATABASE_URL
  const template = mkdtempSync(join(tmpdir(), "svc-bench-template-"))
  const config = await Effect.runPromise(loadConfig({ SVC_DATA_DIR: template }, tmpdir()))
  await Effect.runPromise(Effect.scoped(Layer.build(
    MigrationsLive.pipe(Layer.provide(DatabaseLive), Layer.provide(Layer.succeed(AppConfig, config)))
  )))
  process.env[TEMPLATE_ENV] = template
  const rows: Array<string> = []
  const derived: Array<string> = []
  try {
    const embedded = await startGateway()
    rows.push(await measure(embedded, "PGlite"))
    derived.push(...await derivedLogRows(embedded, "PGlite", RECEIPTS))
    await embedded.close()
    if (serverUrl !== undefined && serverUrl !== "") {
      process.env.DATABASE_URL = serverUrl
      const server = await startGateway()
      rows.push(await measure(server, "PostgreSQL"))
      derived.push(...await derivedLogRows(server, "PostgreSQL", RECEIPTS))
      await server.close()
    }
  } finally {
    rmSync(template, { recursive: true, force: true })
  }
  console.log([
    `Monitoring over ${ROWS.toLocaleString("en")} events and per-call records of one account, p50 / p95 ms:`,
    "| database | logs page 1 | logs at 10,000 | logs at the last page | monitoring 1h | monitoring 30d |",
    "|---|---|---|---|---|---|",
    ...rows,
    ...derivedLogHeader(RECEIPTS),
    ...derived
  ].join("\n"))
}
