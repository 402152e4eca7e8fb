/**
 * The performance targets of issue 17 in one run (`npm run bench`): every
 * measure as a ratio to a bare `node:http` proxy measured in the same round,
 * 3 rounds interleaved, medians; prints the table with the must-reach column
 * and whether each holds. Targets, each in its own process in front of the
 * same fake upstream: the bare proxy; the gateway on PostgreSQL
 * (`DATABASE_URL`); the gateway on the embedded database; the gateway on
 * PostgreSQL with a no-op ledger (billed ÷ unbilled, one hot account); and,
 * on PostgreSQL, the gateway as shipped (`dist/main.js`) with one worker and
 * with two, for JSON at 50 connections. Then the gateway's RSS with 1,000
 * slow streams open (bench/slowStreams.ts). Beside the targets, the last
 * byte's added time with an upstream that answers after 2 ms, as a real
 * model does (bench/upstreamDelay.ts).
 * Without `DATABASE_URL` the PostgreSQL rows say so and are skipped.
 * `BENCH_SMOKE=1`: one short round, and exit 1 only if a ratio is below half
 * its must-reach value (CI's guard against a gross regression, never noise).
 */
import type { ChildProcess } from "node:child_process"
import { type LoadTarget, loadWith, median, nextMessage, type StartServer } from "./children.ts"
import { startDistGateway } from "./distGateway.ts"
import { slowStreamsRss } from "./slowStreams.ts"
import { DELAYED_CALLER, UPSTREAM_DELAY_MS } from "./upstreamDelay.ts"
import { warmUp } from "./warmup.ts"


/** 18 words: the fake upstream echoes them one frame each, so a streamed answer is 20 frames. */
const PROMPT = "Please say hello to the benchmark in a few short words and then stop, because this is only a test"
const messages = [{ role: "user", content: PROMPT }]
const bodies = {
  json: JSON.stringify({ model: "svc/bench", messages }),
  stream: JSON.stringify({ model: "svc/bench", messages, stream: true }),
  /** A JSON call the upstream answers after a delay (bench/upstreamDelay.ts). */
  delayed: JSON.stringify({ model: "svc/bench", messages, user: DELAYED_CALLER })
}

/**
 * The smoke floors (see `Target.floor`): raised as the gateway gets faster, never lowered to pass.
 * The two added times are floored in multiples of the bare proxy's own p50 in the same round, not
 * in milliseconds: on this VM every process wake-up slows together for hours at a time (the bare
 * proxy's p50 at one connection went from 0.3 to 0.9 ms and the gateway's added time with it,
 * commit unchanged), while their quotient stayed within 10–16× (last byte) and 4–8× (first byte)
 * then, and within 1.1–1.5× for both in session 27 (the slow phase of session 22 gave ~3× on code
 * that read ~3× in a fast one too).
 */
const FLOORS = {
  json50: 0.13,
  jsonEmbedded: 0.12,
  sse50: 0.15,
  json1: 0.18,
  ttlbPerBare: 4,
  ttfbPerBare: 4,
  billed: 0.4
}

interface Target {
  readonly name: string
  readonly mustReach: number
  /**
   * What the CI smoke run (`BENCH_SMOKE=1`) fails below (or above): half (or twice) of what this
   * 2-core machine measured when the floor was set (last raised 2026-11-27, session 27: every row
   * but billed ÷ unbilled, from runs reading 0.26–0.27, 0.26–0.28, 0.32–0.34 and 0.39–0.42, and the
   * added times from 1.1–1.5× the bare proxy's p50 to about three times that; added times made
   * multiples of the bare proxy's p50 in session 13), so only a gross regression trips it.
   */
  readonly floor: number
  /** Set for an added time: the bare proxy's p50 of each round, and `floor` is a multiple of it. */
  readonly bare?: Array<number>
  /** Higher is better (a ratio of rates) or lower (added milliseconds, megabytes). */
  readonly better: "higher" | "lower"
  readonly unit: string
  readonly values: Array<number>
}

/**
 * JSON req/s at `concurrency` of the billed gateway and of the unbilled one, each over `seconds`, in
 * halves taken in turn (billed, unbilled, billed, unbilled). This VM's pace drifts within seconds
 * (a server's rate moved ~20% between two 5 s runs in a row, session 41): taken 10 s apart, as
 * they were, the two rates met different paces. Each half follows the other server's, since a
 * server's first second after a pause runs ~10% slower (the bare proxy's too): a half that
 * followed its own would have had an edge.
 */
const billedAndUnbilled = async (
  load: (server: LoadTarget, body: string, concurrency: number, seconds: number) => Promise<{ readonly rps: number }>,
  billed: LoadTarget,
  unbilled: LoadTarget,
  concurrency: number,
  seconds: number
) => {
  const half = (server: LoadTarget) => load(server, bodies.json, concurrency, seconds / 2).then((result) => result.rps)
  const rates = { billed: 0, unbilled: 0 }
  for (let turn = 0; turn < 2; turn++) {
    rates.billed += (await half(billed)) / 2
    rates.unbilled += (await half(unbilled)) / 2
  }
  return rates
}

export const targetsBench = async (
  startServer: StartServer,
  spawnLoader: () => ChildProcess,
  options: { readonly rounds: number; readonly seconds: number; readonly latencySeconds: number; readonly smoke: boolean }
) => {
  const onPostgres = Boolean(process.env.DATABASE_URL)
  const upstream = await startServer(["upstream"])
  const [bare, gateway, embedded, unbilled] = await Promise.all([
    startServer(["proxy", upstream.url]),
    startServer(["gateway", upstream.url]),
    onPostgres ? startServer(["gateway-embedded", upstream.url]) : undefined,
    onPostgres ? startServer(["gateway-unbilled", upstream.url]) : undefined
  ])
  const loader = spawnLoader()
  await nextMessage(loader, "ready")
  const run = loadWith(loader)
  const load = async (server: LoadTarget, body: string, concurrency: number, seconds: number) => {
    const result = await run(server, body, concurrency, seconds)
    if (result.errors > 0) throw new Error(`${server.url}: ${result.errors} failed requests`)
    return result
  }

  const target = (name: string, mustReach: number, floor: number, better: Target["better"], unit = ""): Target =>
    ({ name, mustReach, floor, better, unit, values: [] })
  const addedTime = (name: string, mustReach: number, floorPerBare: number): Target =>
    ({ ...target(name, mustReach, floorPerBare, "lower", " ms"), bare: [] })
  const db = onPostgres ? "PostgreSQL" : "embedded database"
  const t = {
    json50: target(`JSON chat req/s, c50, ${db}, billing on`, 0.25, FLOORS.json50, "higher"),
    jsonEmbedded: target("JSON chat req/s, c50, embedded database", 0.2, FLOORS.jsonEmbedded, "higher"),
    sse50: target("SSE chat req/s, c50 (20 frames per answer)", 0.25, FLOORS.sse50, "higher"),
    json1: target("JSON req/s at 1 connection", 0.25, FLOORS.json1, "higher"),
    ttlb: addedTime("added time to last byte at 1 connection (p50)", 0.5, FLOORS.ttlbPerBare),
    ttfb: addedTime("added time to first streamed byte (p50)", 1, FLOORS.ttfbPerBare),
    billed: target("billed ÷ unbilled, one hot account, PostgreSQL", 0.8, FLOORS.billed, "higher")
  }
  /**
   * Beside the targets, which time an upstream that answers at once: the last byte's added time
   * (ms) when the upstream answers after a delay, as a real model does. Each call's code then runs
   * cold, on our side as on the bare proxy's (docs/performance.md). The issue sets no bar for it;
   * not in the smoke run.
   */
  const delayed = { added: [] as Array<number>, bare: [] as Array<number> }

  const C = 50
  /** The bare proxy's own req/s at 50 connections (JSON, SSE) each round: the baseline every ratio divides by. */
  const bareRates = { json: [] as Array<number>, sse: [] as Array<number> }
  // Each server is timed once it is warm (bench/warmup.ts): a fresh gateway ramps up for seconds.
  for (const server of [bare, gateway, embedded, unbilled]) if (server !== undefined) await warmUp(load, server, bodies)
  for (let round = 1; round <= options.rounds; round++) {
    const jsonBare = await load(bare, bodies.json, C, options.seconds)
    const json = unbilled === undefined
      ? { billed: (await load(gateway, bodies.json, C, options.seconds)).rps, unbilled: undefined }
      : await billedAndUnbilled(load, gateway, unbilled, C, options.seconds)
    t.json50.values.push(json.billed / jsonBare.rps)
    bareRates.json.push(jsonBare.rps)
    if (json.unbilled !== undefined) t.billed.values.push(json.billed / json.unbilled)
    if (embedded !== undefined) t.jsonEmbedded.values.push((await load(embedded, bodies.json, C, options.seconds)).rps / jsonBare.rps)
    const sseBare = await load(bare, bodies.stream, C, options.seconds)
    t.sse50.values.push((await load(gateway, bodies.stream, C, options.seconds)).rps / sseBare.rps)
    bareRates.sse.push(sseBare.rps)
    const oneBare = await load(bare, bodies.json, 1, options.latencySeconds)
    const one = await load(gateway, bodies.json, 1, options.latencySeconds)
    t.json1.values.push(one.rps / oneBare.rps)
    t.ttlb.values.push(one.p50 - oneBare.p50)
    t.ttlb.bare!.push(oneBare.p50)
    const firstBare = await load(bare, bodies.stream, 1, options.latencySeconds)
    t.ttfb.values.push((await load(gateway, bodies.stream, 1, options.latencySeconds)).firstByteP50 - firstBare.firstByteP50)
    t.ttfb.bare!.push(firstBare.firstByteP50)
    if (!options.smoke) {
      const delayedBare = await load(bare, bodies.delayed, 1, options.latencySeconds)
      delayed.added.push((await load(gateway, bodies.delayed, 1, options.latencySeconds)).p50 - delayedBare.p50)
      delayed.bare.push(delayedBare.p50)
    }
    console.log(`bench: round ${round}/${options.rounds} done`)
  }
  for (const child of [gateway, embedded, unbilled]) child?.child.send("stop")

  // The gateway as shipped with one worker and with two (issue 17: one process per core on
  // PostgreSQL), in rounds of their own, so their background writes never overlap the rows above.
  const shipped = onPostgres && !options.smoke
    ? await Promise.all([startDistGateway(upstream.url, 1), startDistGateway(upstream.url, 2)])
    : []
  /** JSON at c50 of the shipped gateway with 1 and with 2 workers, as ratios to the bare proxy. */
  const perWorkers = shipped.map((): Array<number> => [])
  for (const server of shipped) await warmUp(load, server, bodies)
  for (let round = 1; round <= (shipped.length > 0 ? options.rounds : 0); round++) {
    const jsonBare = await load(bare, bodies.json, C, options.seconds)
    for (const [i, server] of shipped.entries()) perWorkers[i]!.push((await load(server, bodies.json, C, options.seconds)).rps / jsonBare.rps)
  }
  await Promise.all(shipped.map((server) => server.stop()))
  for (const child of [bare, upstream]) child.child.send("stop")
  loader.send("stop")

  const rss = target("RSS with 1,000 open slow streams", 400, 800, "lower", " MB")
  if (!options.smoke) rss.values.push(await slowStreamsRss(startServer))

  const rows = Object.values(t).concat(options.smoke ? [] : [rss])
  /** Whether `value` (the row's median unless given) is on the good side of `bar`. */
  const holds = (row: Target, bar: number, value = median(row.values)) =>
    row.better === "higher" ? value >= bar : value <= bar
  const shown = (row: Target, x: number) => `${x.toFixed(row.unit === "" ? 2 : row.unit === " MB" ? 0 : 2)}${row.unit}`
  const lines = [
    "",
    "| measure | gateway ÷ bare (each round) | must reach | holds |",
    "|---|---:|---:|:---:|",
    ...rows.map((row) =>
      row.values.length === 0
        ? `| ${row.name} | not measured (set DATABASE_URL) | ${row.better === "higher" ? "≥" : "≤"} ${shown(row, row.mustReach)} | |`
        : `| ${row.name} | **${shown(row, median(row.values))}** (${row.values.map((x) => shown(row, x)).join(", ")}) | ${
          row.better === "higher" ? "≥" : "≤"
        } ${shown(row, row.mustReach)} | ${holds(row, row.mustReach) ? "yes" : "no"} |`
    ),
    "",
    `Medians of ${options.rounds} interleaved rounds (${options.seconds} s at ${C} connections, ${options.latencySeconds} s at 1); ` +
      "added times are the gateway's p50 minus the bare proxy's in the same round. " +
      `The bare proxy itself (each round): JSON c50 ${bareRates.json.map(Math.round).join(", ")} req/s; ` +
      `SSE c50 ${bareRates.sse.map(Math.round).join(", ")} req/s; p50 at 1 connection ${
        t.ttlb.bare!.map((x) => x.toFixed(2)).join(", ")
      } ms.`,
    ...(delayed.added.length === 0 ? [] : [
      "",
      `Beside the targets, with the upstream answering after ${UPSTREAM_DELAY_MS} ms as a real model takes its time (each call's ` +
      `code then runs cold): added time to the last byte at 1 connection (p50) **${median(delayed.added).toFixed(2)} ms** ` +
      `(${delayed.added.map((x) => `${x.toFixed(2)} ms`).join(", ")}); the bare proxy's p50 ${delayed.bare.map((x) => x.toFixed(2)).join(", ")} ms.`
    ]),
    ...(perWorkers.length === 0 ? [] : [
      "",
      "| the gateway as shipped (`dist/main.js`, PostgreSQL): JSON req/s, c50, ÷ bare | 1 worker | 2 workers |",
      "|---|---:|---:|",
      `| median (each round) | ${perWorkers.map((values) => `**${median(values).toFixed(2)}** (${values.map((x) => x.toFixed(2)).join(", ")})`).join(" | ")} |`,
      "",
      "Two workers share this machine's two cores with the load generator, the upstream and PostgreSQL."
    ])
  ]
  console.log(lines.join("\n"))
  if (options.smoke) {
    /** An added time as a multiple of the bare proxy's p50; any other measure as it is. */
    const floored = (row: Target) => row.bare === undefined ? median(row.values) : median(row.values) / median(row.bare)
    const gross = rows.filter((row) => row.values.length > 0 && !holds(row, row.floor, floored(row)))
    // How far each added time is from its floor, so a run that passes shows its margin too.
    for (const row of rows.filter((row) => row.bare !== undefined && row.values.length > 0)) {
      console.log(`bench smoke: ${row.name}: ${floored(row).toFixed(1)}× the bare proxy's p50 (floor ${row.floor}×)`)
    }
    for (const row of gross) {
      console.error(
        row.bare === undefined
          ? `bench smoke: ${row.name} is ${shown(row, median(row.values))}, past its floor ${shown(row, row.floor)}`
          : `bench smoke: ${row.name} is ${shown(row, median(row.values))}, ${floored(row).toFixed(1)}× the bare proxy's p50 ` +
            `(${shown(row, median(row.bare))}), past its floor ${row.floor}×`
      )
    }
    return gross.length === 0
  }
  return true
}
