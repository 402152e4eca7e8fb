/**
 * The load generator, in its own process: for each job it gets over IPC it
 * keeps `concurrency` requests in flight on a keep-alive undici Pool for
 * `seconds`, reads every body to the end, and answers with the rate and
 * latency percentiles.
 */
import { performance } from "node:perf_hooks"
import { Pool } from "undici"
import { boundLifetime } from "./lifetime.ts"

export interface Job {
  readonly url: string
  readonly key?: string
  /** Keys to take in turn, one a request (many accounts); else `key`. */
  readonly keys?: ReadonlyArray<string>
  readonly body: string
  readonly concurrency: number
  readonly seconds: number
}

export interface Result {
  readonly requests: number
  readonly errors: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  /** Median time to the first byte of the body (a stream's first frame). */
  readonly firstByteP50: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!

const run = async (job: Job): Promise<Result> => {
  const pool = new Pool(job.url, { connections: job.concurrency, pipelining: 1 })
  const headersOf = (key: string | undefined) => ({
    "content-type": "application/json",
    ...(key === undefined ? {} : { authorization: `Bearer ${key}` })
  })
  // One set of headers per key, taken in turn.
  const keyed = (job.keys ?? [job.key]).map(headersOf)
  let sent = 0
  const latencies: Array<number> = []
  const firstBytes: Array<number> = []
  let errors = 0
  const started = performance.now()
  const end = started + job.seconds * 1000
  const worker = async () => {
    while (performance.now() < end) {
      const t0 = performance.now()
      try {
        const headers = keyed[sent++ % keyed.length]!
        const response = await pool.request({ method: "POST", path: "/v1/chat/completions", headers, body: job.body })
        let firstByte = NaN
        for await (const _ of response.body) {
          // Read to the end: a stream counts when its last byte arrived.
          if (Number.isNaN(firstByte)) firstByte = performance.now() - t0
        }
        if (response.statusCode === 200) {
          latencies.push(performance.now() - t0)
          firstBytes.push(firstByte)
        }
        else errors += 1
      } catch {
        errors += 1
      }
    }
  }
  await Promise.all(Array.from({ length: job.concurrency }, worker))
  const elapsed = (performance.now() - started) / 1000
  await pool.close()
  latencies.sort((a, b) => a - b)
  firstBytes.sort((a, b) => a - b)
  return {
    requests: latencies.length,
    errors,
    rps: latencies.length / elapsed,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    firstByteP50: percentile(firstBytes, 0.5)
  }
}

if (process.send !== undefined) {
  boundLifetime("load.ts")
  process.on("message", (message: Job | "stop") => {
    if (message === "stop") process.exit(0)
    run(message).then((result) => process.send!({ result }))
  })
  process.on("disconnect", () => process.exit(0))
  process.send({ ready: {} })
}
