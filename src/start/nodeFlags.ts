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
 *
 * `--no-allocation-site-pretenuring`: V8 watches which object literals
 * outlive a scavenge, and after a few seconds allocates a site's objects
 * straight in the old generation if most of its sampled ones did. Under
 * load a call's objects outlive a scavenge often enough (open calls) to be
 * pretenured, then die there young, and the old generation's collections
 * pay for them. Without it the gateway served 4–12% more JSON calls a
 * second at 50 connections, at the same memory (item 109); the decision is
 * made per site from the first seconds' samples, so with it on a process's
 * pace could differ from one start to the next.
 */
export const GATEWAY_NODE_FLAGS: ReadonlyArray<string> = ["--max-semi-space-size=32", "--no-allocation-site-pretenuring"]

/** A V8 flag's name whichever way it is set: `--no-x`, `--x`, `--x=1` and `--x_y` name the same one. */
const flagName = (arg: string) => arg.split("=")[0]!.replace(/^--(no[-_])?/, "").replaceAll("_", "-")

/** `execArgv` with each of the gateway's flags it does not set itself (either way). */
export const withGatewayFlags = (execArgv: ReadonlyArray<string>): Array<string> => [
  ...execArgv,
  ...GATEWAY_NODE_FLAGS.filter((flag) => !execArgv.some((arg) => flagName(arg) === flagName(flag)))
]
