/**
 * Fairness under fast streams (part of `npm run bench`): a plain JSON call's
 * latency at one connection, alone and while 10 streams from a fast upstream
 * run through the same gateway (each ~4,000 frames, written by the upstream
 * as fast as it can). Interleaved per round, like the overhead table: only
 * the ratio of the two p50s compares across runs. A stream's frame loop that
 * never gives the event loop a turn shows here as seconds.
 */
import type { ChildProcess } from "node:child_process"
import { median, nextMessage } from "./children.ts"
import type { Job, Result } from "./load.ts"

const STREAMS = 10
/** The fake upstream streams one frame per word of the prompt. */
const FRAMES = 4000

interface Target {
  readonly url: string
  readonly key?: string
}

const run = (loader: ChildProcess, job: Job) => {
  loader.send(job)
  return nextMessage<Result>(loader, "result")
}

/** Two load generators (the probe and the streams); prints a Markdown table. */
export const fairness = async (gateway: Target, spawnLoader: () => ChildProcess, rounds: number, seconds: number) => {
  const probe = spawnLoader()
  const streams = spawnLoader()
  await Promise.all([nextMessage(probe, "ready"), nextMessage(streams, "ready")])
  const json = JSON.stringify({ model: "svc/bench", messages: [{ role: "user", content: "Say hello in a few words" }] })
  const fast = JSON.stringify({
    model: "svc/bench",
    messages: [{ role: "user", content: "w ".repeat(FRAMES) }],
    stream: true
  })
  const alone: Array<Result> = []
  const beside: Array<Result> = []
  const streamed: Array<Result> = []
  for (let round = 0; round < rounds; round++) {
    alone.push(await run(probe, { ...gateway, body: json, concurrency: 1, seconds }))
    // The streams start first and outlast the probe, so every probe call has ten streams beside it.
    const load = run(streams, { ...gateway, body: fast, concurrency: STREAMS, seconds: seconds + 1 })
    await new Promise((resolve) => setTimeout(resolve, 500))
    beside.push(await run(probe, { ...gateway, body: json, concurrency: 1, seconds }))
    streamed.push(await load)
  }
  for (const child of [probe, streams]) child.send("stop")
  const p50 = (xs: Array<Result>) => median(xs.map((x) => x.p50))
  const ratios = beside.map((b, i) => b.p50 / alone[i]!.p50)
  const errors = [...alone, ...beside, ...streamed].reduce((n, x) => n + x.errors, 0)
  console.log([
    "",
    `| plain JSON call, 1 connection | p50 ms | p99 ms | calls |`,
    "|---|---:|---:|---:|",
    `| alone | ${p50(alone).toFixed(2)} | ${median(alone.map((x) => x.p99)).toFixed(2)} | ${median(alone.map((x) => x.requests))} |`,
    `| beside ${STREAMS} fast streams (${FRAMES} frames each) | ${p50(beside).toFixed(2)} | ${
      median(beside.map((x) => x.p99)).toFixed(2)
    } | ${median(beside.map((x) => x.requests))} |`,
    "",
    `p50 beside ÷ alone: **${median(ratios).toFixed(1)}** (each round: ${ratios.map((r) => r.toFixed(1)).join(", ")}). ` +
    `Streams completed per round: ${streamed.map((x) => x.requests).join(", ")}. Failed requests: ${errors}. ` +
    `Medians of ${rounds} interleaved rounds of ${seconds} s.`
  ].join("\n"))
}
