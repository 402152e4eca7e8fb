/**
 * What PostgreSQL spends on the settlement statement (`BENCH_ONLY=settlement`, needs
 * `DATABASE_URL`): the ledger's own statement (ledgerSettle.ts), prepared as the gateway
 * prepares it, run on one connection over a freshly migrated database with calls held from a
 * credit lease (a hot account's), and the CPU its server process spent per call (from /proc),
 * by batch size and by the events a call writes. The whole-gateway benches cannot say this:
 * PostgreSQL shares the two cores with the gateway, the upstream and the load generator, and
 * its time moves with theirs. Session 24 found with it that a call's five events were ~40% of
 * what its settlement cost PostgreSQL; since session 25 three of them are read from the receipt
 * (migration 0022, item 57), since session 26 the other two as well when they are all the call
 * has (0023, item 59), and the account's rows are no longer checked by foreign keys (0024, item 60).
 */
import { Effect } from "effect"
import pg from "pg"
import { makeSettleBatch, SETTLE } from "../layers/billing/ledgerSettle.ts"
import type { SettleItem } from "../layers/billing/ledgerRows.ts"
import { keptInReceipt } from "../layers/events/receiptEvents.ts"
import { IdsLive } from "../layers/platform/IdsLive.ts"
import { Ids } from "../services/Ids.ts"
import type { CallEvent } from "../services/Ledger.ts"
import { freshDatabase } from "../test/support/database.ts"
import { startGateway } from "../test/support/gateway.ts"
import { procCpuMicros } from "./processes.ts"

/** Settlements made before each measurement: tables and indexes past their first pages. */
const WARM_CALLS = 5_000
/**
 * Calls settled in each round of a measurement, and its rounds. /proc counts CPU in 10 ms ticks, ~5 µs
 * a call at 2,048: `BENCH_SETTLE_ROUND_CALLS=16384` to tell apart changes of a few µs.
 */
const ROUND_CALLS = Number(process.env.BENCH_SETTLE_ROUND_CALLS ?? 2_048)
const ROUNDS = 5

/** The routing and privacy events a served call writes with its receipt (docs/events.md). */
const CALL_EVENTS: ReadonlyArray<CallEvent> = [
  { type: "provider.route", data: { model: "svc/bench", tier: "third_party", reason: "requested model", attempt: 1, outcome: "ok" } },
  { type: "privacy.class_served", data: { class: "standard_route" } }
]

export const settlementBench = async () => {
  if (!process.env.DATABASE_URL) throw new Error("BENCH_ONLY=settlement measures PostgreSQL's server process: set DATABASE_URL")
  const ids = Effect.runSync(Effect.provide(Ids, IdsLive))
  const { settlementInput } = makeSettleBatch(() => Effect.die("unused"), undefined as never, ids)
  // The gateway migrates the database; the statements then run on a connection of our own.
  const database = await freshDatabase()
  await (await startGateway({ database })).close()
  const client = new pg.Client({ connectionString: database.env.DATABASE_URL })
  await client.connect()
  try {
    const accountId = ids.make("acct")
    const leaseId = ids.make("lse")
    await client.query("INSERT INTO accounts (id, name, balance_usd, reserved_usd) VALUES ($1, 'bench', 1000000, 1000000)", [accountId])
    await client.query(
      "INSERT INTO credit_leases (id, account_id, amount_usd, expires_at) VALUES ($1, $2, 1000000, now() + interval '1 day')",
      [leaseId, accountId]
    )
    const server = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid

    const item = (events: ReadonlyArray<CallEvent>): SettleItem => ({
      _tag: "settle",
      reservation: { id: ids.make("rcpt"), accountId, requestId: ids.make("req"), amount: 6_157_000n, reservedAt: new Date(), leaseId },
      bill: {
        endpoint: "/v1/chat/completions",
        model: "svc/bench",
        tier: "third_party",
        privacyClass: "standard_route",
        usage: { inputTokens: 14, outputTokens: 10 },
        price: { input: 500_000_000n, output: 1_500_000_000n },
        cost: { upstream: 17_600n, margin: 4_400n, total: 22_000n },
        attempts: [{ model: "svc/bench", outcome: "ok", latencyMs: 3, deployment: "bench-upstream/0" }],
        providerId: "bench-upstream",
        events,
        keyId: ids.make("key")
      }
    })
    const settle = async (calls: number, batch: number, events: ReadonlyArray<CallEvent>) => {
      for (let done = 0; done < calls; done += batch) {
        const input = Array.from({ length: batch }, () => settlementInput(item(events)))
        const { rowCount } = await client.query({ name: "settle", text: SETTLE, values: [JSON.stringify(input), accountId] })
        if (rowCount !== batch) throw new Error(`a settlement of ${batch} calls wrote ${rowCount} receipts`)
      }
    }
    await settle(WARM_CALLS, 50, CALL_EVENTS)
    await client.query("ANALYZE")

    // Rounds interleaved, medians shown: the machine's pace drifts more than these rows differ.
    // `BENCH_SETTLE_BATCHES=64,128,256`: other batch sizes (a hot account's went as ~250 in bench/billing.ts in session 34).
    const batches = (process.env.BENCH_SETTLE_BATCHES ?? "1,8,64").split(",").map(Number)
    const configs = batches.flatMap((batch) =>
      [CALL_EVENTS, []].map((events) => ({ batch, events, cpu: [] as Array<number>, wall: [] as Array<number> }))
    )
    for (let round = 0; round < ROUNDS; round++) {
      for (const config of round % 2 === 0 ? configs : [...configs].reverse()) {
        const cpu = procCpuMicros(server)
        const began = performance.now()
        await settle(ROUND_CALLS, config.batch, config.events)
        config.cpu.push((procCpuMicros(server) - cpu) / ROUND_CALLS)
        config.wall.push(((performance.now() - began) * 1000) / ROUND_CALLS)
      }
    }
    const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[values.length >> 1]!
    const rows = configs.map(({ batch, cpu, events, wall }) =>
      `| ${batch} | ${3 + events.length} (${keptInReceipt(events) ? 0 : events.length} stored) | ${median(cpu).toFixed(0)} | ${
        median(wall).toFixed(0)
      } |`
    )
    console.log([
      "",
      `The settlement statement alone, on PostgreSQL (calls held from a lease, medians of ${ROUNDS} interleaved rounds of ${ROUND_CALLS} calls, one connection):`,
      "| calls a statement | events a call | server CPU µs/call | wall µs/call |",
      "|---:|---:|---:|---:|",
      ...rows,
      "",
      "Server CPU is the PostgreSQL process serving the connection (user and system time from /proc, commits' WAL flushes included).",
      "Reproduce: `DATABASE_URL=postgres://… BENCH_ONLY=settlement npx tsx bench/run.ts`."
    ].join("\n"))
  } finally {
    await client.end()
    await database.drop()
  }
}
