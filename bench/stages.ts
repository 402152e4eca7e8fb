/**
 * The per-stage CPU budget of one chat call (`BENCH_ONLY=stages npm run
 * bench`, docs/performance.md): the whole gateway in this process over the
 * database the bench runs on, the fake upstream in its own, and each stage of
 * the call run on its own, one after another, its CPU time per run measured
 * (this process, every thread: GC included) next to its wall time. The
 * stages are the ones the lane and the pipeline run, in order; the whole call
 * (pipeline, no HTTP) and a streamed one close the table, so what the stages
 * leave out shows as the difference.
 */
import { fork } from "node:child_process"
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import { fileURLToPath } from "node:url"
import { Effect, Schema, Stream } from "effect"
import { Admission } from "../services/Admission.ts"
import { ApiKeys } from "../services/ApiKeys.ts"
import { Billing } from "../services/Billing.ts"
import { CallStats } from "../services/CallStats.ts"
import { ChatRequest } from "../services/Chat.ts"
import { ChatGateway } from "../services/ChatGateway.ts"
import { forEachChunk } from "../services/pulledStream.ts"
import { RoutePlanner } from "../services/RoutePlanner.ts"
import { Upstream } from "../services/Upstream.ts"
import { checkedJson } from "../src/http/checkedJson.ts"
import { principalOf } from "../src/http/SecurityLive.ts"
import { freshDatabase } from "../test/support/database.ts"
import { startGateway } from "../test/support/gateway.ts"
import { typescriptLoader } from "./children.ts"

/**
 * `BENCH_STAGE_PROF=<part of a stage's name>`: a CPU profile of that stage's runs (to read with
 * profileStages.ts); with `BENCH_STAGE_HEAP=1`, a sampling heap profile of what they allocate
 * instead, objects the collector freed included (a `.heapprofile`, for Chrome's memory tools).
 */
const profiling = (() => {
  const session = new Session()
  return {
    start: async () => {
      session.connect()
      if (process.env.BENCH_STAGE_HEAP) {
        await session.post("HeapProfiler.enable")
        // Node's types predate the two flags; without them only what survives is counted.
        await (session.post as any)("HeapProfiler.startSampling", {
          samplingInterval: 4096,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true
        })
        return
      }
      await session.post("Profiler.enable")
      await session.post("Profiler.start")
    },
    stop: async (file: string) => {
      if (process.env.BENCH_STAGE_HEAP) {
        const { profile } = await (session.post as any)("HeapProfiler.stopSampling")
        writeFileSync(file.replace(/cpuprofile$/, "heapprofile"), JSON.stringify(profile))
        session.disconnect()
        return
      }
      const { profile } = await session.post("Profiler.stop")
      writeFileSync(file, JSON.stringify(profile))
      session.disconnect()
    }
  }
})()

const RUNS = Number(process.env.BENCH_STAGE_RUNS ?? 2000)
const PROMPT = "Please say hello to the benchmark in a few short words and then stop, because this is only a test"

/** A fake upstream in a process of its own (bench/servers.ts `role`), and its base URL. */
const startUpstream = async (role: string) => {
  const child = fork(fileURLToPath(new URL("./servers.ts", import.meta.url)), [role], { execArgv: typescriptLoader })
  const url = await new Promise<string>((resolve) => child.on("message", (m: any) => m.ready && resolve(m.ready.url)))
  return { child, url }
}

export const stagesBench = async () => {
  const { child: upstreamProcess, url: upstreamUrl } = await startUpstream("upstream")
  const paced = await startUpstream("upstream-paced")
  const gateway = await startGateway({
    database: process.env.DATABASE_URL ? await freshDatabase() : undefined,
    scanResponses: false,
    config: {
      models: ["svc/bench", "svc/bench-paced"].map((id) => ({
        id, context: 128000, pricing: { input: "0.50", output: "1.50" }, modalities: ["text"], capabilities: ["chat", "streaming"]
      })),
      providers: [
        { id: "bench-upstream", plugin: "openai-compatible", baseUrl: upstreamUrl, deployments: [{ model: "svc/bench", upstreamModel: "bench-large", cost: { input: "0.40", output: "1.20" } }] },
        { id: "bench-paced", plugin: "openai-compatible", baseUrl: paced.url, deployments: [{ model: "svc/bench-paced", upstreamModel: "bench-large", cost: { input: "0.40", output: "1.20" } }] }
      ]
    }
  })
  const { key } = await gateway.account({ credit: "1000000" })
  const text = JSON.stringify({ model: "svc/bench", messages: [{ role: "user", content: PROMPT }] })
  const limits = { maxDepth: 64, maxArrayItems: 10_000 }
  const decode = Schema.decodeUnknown(ChatRequest)

  const rows: Array<string> = []
  /** Runs `once` `runs` times after a warm-up; CPU and wall time per run in µs. */
  const measure = async (name: string, once: Effect.Effect<unknown, unknown, any>, runs = RUNS) => {
    // As the chat lane runs a call: traces off (they are exported only when the app serves every call).
    const loop = (n: number) =>
      Effect.withTracerEnabled(Effect.forEach(Array.from({ length: n }), () => Effect.scoped(once), { discard: true }), false)
    await gateway.run(loop(Math.min(200, runs)) as any)
    const cpu = process.cpuUsage()
    const t0 = performance.now()
    const profiled = process.env.BENCH_STAGE_PROF !== undefined && name.includes(process.env.BENCH_STAGE_PROF)
    if (profiled) await profiling.start()
    await gateway.run(loop(runs) as any)
    if (profiled) await profiling.stop(`${process.env.BENCH_STAGE_PROF_FILE ?? "stage"}.cpuprofile`)
    const wall = (performance.now() - t0) * 1000 / runs
    const used = process.cpuUsage(cpu)
    rows.push(`| ${name} | ${((used.user + used.system) / runs).toFixed(0)} | ${wall.toFixed(0)} |`)
  }

  const setup = await gateway.run(Effect.gen(function*() {
    const keys = yield* ApiKeys
    const principal = yield* principalOf(keys, ["chat"], `Bearer ${key}`)
    const request = yield* decode(JSON.parse(text))
    const call = yield* Effect.scoped((yield* Admission).chat(request, principal))
    const route = yield* (yield* RoutePlanner).plan(call)
    const pacedCall = yield* Effect.scoped((yield* Admission).chat({ ...request, model: "svc/bench-paced" }, principal))
    const pacedRoute = yield* (yield* RoutePlanner).plan(pacedCall)
    return { keys, principal, request, call, route, pacedRoute }
  }) as any) as any

  // Streams are read as the chat lane writes an answer: a plain loop over the pull (services/pulledStream.ts).
  const drained = (stream: Stream.Stream<unknown, unknown>) => forEachChunk(stream, () => Effect.void)
  await measure("body: JSON shape rules, parse, schema decode", Effect.flatMap(checkedJson(text, limits), decode))
  await measure("key and scope (kept in memory)", principalOf(setup.keys, ["chat"], `Bearer ${key}`))
  await measure("admission: token count, privacy ask, rate limit", Effect.flatMap(Admission, (a) => a.chat(setup.request, setup.principal)))
  await measure("route plan", Effect.flatMap(RoutePlanner, (p) => p.plan(setup.call)))
  await measure("hold, then release (two statements)", Effect.flatMap(Billing, (b) => b.withHold(setup.principal, setup.route.amount, () => Effect.void)))
  await measure("upstream call (JSON, keep-alive)", Effect.flatMap(Upstream, (u) => u.complete(setup.route.targets, setup.request)))
  await measure("upstream call (streamed, 20 frames, read to the end)", Effect.flatMap(Upstream, (u) =>
    Effect.flatMap(u.stream(setup.route.targets, { ...setup.request, stream: true }), (answered) => drained(answered.value))))
  await measure("upstream call (streamed, 20 frames, each in a read of its own)", Effect.flatMap(Upstream, (u) =>
    Effect.flatMap(u.stream(setup.pacedRoute.targets, { ...setup.request, model: "svc/bench-paced", stream: true }), (answered) => drained(answered.value))),
    Math.max(20, Math.round(RUNS / 10)))
  await measure("call record (kept for the next flush)", Effect.flatMap(CallStats, (s) => s.record({
    requestId: "req_bench", accountId: setup.principal.accountId, keyId: setup.principal.keyId, endpoint: "/v1/chat/completions",
    status: 200, code: undefined, latencyMs: 1, ttftMs: undefined, inputTokens: 20, outputTokens: 20, spend: 1000n, endedAt: Date.now()
  } as any)))
  await measure("**whole call, JSON** (pipeline: admission to settlement, no HTTP)", Effect.flatMap(ChatGateway, (g) => g.complete(setup.request, setup.principal)))
  await measure("**whole call, streamed, 20 frames** (no HTTP)", Effect.flatMap(ChatGateway, (g) =>
    Effect.flatMap(g.stream({ ...setup.request, stream: true }, setup.principal), (s) => drained(s.chunks))))
  await measure("**whole call, streamed, 20 frames, each in a read of its own** (no HTTP)", Effect.flatMap(ChatGateway, (g) =>
    Effect.flatMap(g.stream({ ...setup.request, model: "svc/bench-paced", stream: true }, setup.principal), (s) => drained(s.chunks))),
    Math.max(20, Math.round(RUNS / 10)))

  console.log([
    "",
    `| stage (run alone, ${RUNS} times, one after another; the paced stream a tenth of that) | CPU µs | wall µs |`,
    "|---|---:|---:|",
    ...rows,
    "",
    `On ${process.env.DATABASE_URL ? "PostgreSQL" : "the embedded database"}. CPU is this process's, every thread (GC's too).`
  ].join("\n"))
  await gateway.close()
  upstreamProcess.kill()
  paced.child.kill()
}

