/**
 * The gateway as the benchmark runs it (bench/servers.ts, its `gateway…`
 * roles): over a fresh database, every call counted against rate limits no
 * load reaches, logging as `npm start` does. Imported only by a gateway's
 * process: the bare proxy's and the upstream's processes load none of the
 * app, as a bare proxy of its own would not.
 */
import { mkdtempSync, openSync, rmSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Layer, Logger, LogLevel } from "effect"
import { CallStatsNone } from "../layers/monitoring/CallStatsNone.ts"
import { coreWith } from "../layers/Core.ts"
import { LedgerPg } from "../layers/billing/LedgerPg.ts"
import { jsonLines, lineBuffer } from "../src/start/logFormat.ts"
import { freshDatabase } from "../test/support/database.ts"
import { startGateway } from "../test/support/gateway.ts"
import { NoopLedger } from "./noopLedger.ts"
import { VAST_MODEL } from "./refusal.ts"

const BENCH_MODEL = "svc/bench"
/** Requests and tokens per minute of every bench key: the largest limit there is. */
const BENCH_LIMIT = 2_147_483_647

/**
 * The gateway logs as `npm start` runs it: a JSON line per request (src/start/logFormat.ts), here
 * written to /dev/null; warnings and worse also to the bench's own output.
 */
const devNull = openSync("/dev/null", "w")
const requestLines = Layer.mergeAll(
  Logger.minimumLogLevel(LogLevel.Info),
  jsonLines(lineBuffer((text) => writeSync(devNull, `${text}\n`))),
  Logger.add(Logger.filterLogLevel(Logger.prettyLogger(), LogLevel.greaterThanEqual(LogLevel.Warning)))
)

/** Gateway variants: keeping no call records, on the embedded database whatever DATABASE_URL says, billing nothing. */
export type Variant = "unrecorded" | "embedded" | "unbilled"

/** The whole gateway over a fresh database (a cold embedded start unless DATABASE_URL is set). */
export const startBenchGateway = async (upstreamBaseUrl: string, variant?: Variant) => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-db-"))
  const database = process.env.DATABASE_URL && variant !== "embedded"
    ? await freshDatabase()
    : { env: { SVC_DATA_DIR: dataDir, DATABASE_URL: "" }, drop: async () => {} }
  const gateway = await startGateway({
    logs: requestLines,
    database,
    scanResponses: false,
    ...(variant === "unrecorded" ? { core: coreWith(LedgerPg, CallStatsNone) } : {}),
    ...(variant === "unbilled" ? { core: coreWith(NoopLedger) } : {}),
    config: {
      // Every call counted against rate limits, as on a production install: limits no load here reaches.
      limits: { defaults: { rpm: BENCH_LIMIT, tpm: BENCH_LIMIT, concurrency: 100_000 } },
      models: [{
        id: BENCH_MODEL,
        context: 128000,
        pricing: { input: "0.50", output: "1.50" },
        modalities: ["text"],
        capabilities: ["chat", "streaming"]
      }, {
        // A context large enough that a 5 MB prompt reaches the balance check (bench/refusal.ts).
        id: VAST_MODEL,
        context: 50_000_000,
        pricing: { input: "0.50", output: "1.50" },
        modalities: ["text"],
        capabilities: ["chat"]
      }],
      providers: [{
        id: "bench-upstream",
        plugin: "openai-compatible",
        baseUrl: upstreamBaseUrl,
        deployments: [
          { model: BENCH_MODEL, upstreamModel: "bench-large", cost: { input: "0.40", output: "1.20" } },
          { model: VAST_MODEL, upstreamModel: "bench-vast", cost: { input: "0.40", output: "1.20" } }
        ]
      }]
    }
  })
  const { key } = await gateway.account({ credit: "1000000" })
  const { key: brokeKey } = await gateway.account({ credit: "0" })
  // BENCH_ACCOUNTS=n: n accounts, a key each, for loads that spread calls over many tenants (bench/pair.ts).
  const keys = [key]
  while (keys.length < Number(process.env.BENCH_ACCOUNTS ?? 1)) keys.push((await gateway.account({ credit: "1000000" })).key)
  return {
    url: gateway.url,
    key,
    keys,
    brokeKey,
    close: async () => {
      await gateway.close()
      await database.drop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}
