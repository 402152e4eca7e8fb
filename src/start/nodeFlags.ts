/**
 * The Node flags every gateway process runs with, kept in one place. V8 reads
 * them only from the command line, so `npm start` and the image's CMD pass
 * them (test/deployment.test.ts checks both against this list), the
 * supervisor gives them to the workers it forks, and the benchmark starts
 * its servers, the bare proxy included, with them.
 *
 * `--max-semi-space-size=32` (MiB; V8's default is 16): a call's objects live
 * as long as its upstream takes to answer, tens of milliseconds under load,
 * and with the default young generation a scavenge came every ~100 ms, while
 * many calls were still open: their objects were copied, and those open at
 * two scavenges moved to the old generation, whose collection is costlier.
 * At 32 MiB the collector's main-thread time per call fell by a third at 50
 * connections (docs/performance.md, item 47), for up to 32 MiB more memory.
 */
export const GATEWAY_NODE_FLAGS: ReadonlyArray<string> = ["--max-semi-space-size=32"]

/** `execArgv` with each of the gateway's flags it does not set itself. */
export const withGatewayFlags = (execArgv: ReadonlyArray<string>): Array<string> => [
  ...execArgv,
  ...GATEWAY_NODE_FLAGS.filter((flag) => !execArgv.some((arg) => arg.split("=")[0] === flag.split("=")[0]))
]
