/**
 * What a server's work on a call's path costs at one connection on this VM
 * (`BENCH_ONLY=wakeups`, docs/performance.md): the bare proxy with a busy
 * wait of 0 to 300 µs before each upstream request, or of 0 to 160 µs after
 * its answer, each behind the same upstream and loaded in turn at one
 * connection, rounds interleaved.
 * Were a wait's cost only its own CPU, a proxy's p50 would grow by the wait
 * and no more. On this VM it grows by the wait up to ~100 µs, then jumps by
 * ~0.15–0.2 ms more: a virtual CPU idle longer than ~150 µs (here, the one the
 * load generator and the upstream share, while the proxy spins) is put to
 * sleep by the host and takes ~65 µs to wake where it took ~8, and every
 * process boundary a call then crosses pays that. After the answer the jump
 * comes past ~90 µs (the load generator's CPU idles meanwhile). The last
 * column shows it.
 */
import type { ChildProcess } from "node:child_process"
import { loadWith, median, nextMessage, type StartServer } from "./children.ts"

/** Busy waits, µs, before each upstream request and after its answer: each row one proxy. */
const WAITS: ReadonlyArray<{ readonly before: number; readonly after: number }> = [
  ...[0, 50, 100, 125, 150, 200, 300].map((before) => ({ before, after: 0 })),
  ...[30, 60, 90, 120, 160].map((after) => ({ before: 0, after }))
]

export const wakeupsBench = async (
  startServer: StartServer,
  spawnLoader: () => ChildProcess,
  body: string,
  rounds: number,
  seconds: number
) => {
  const upstream = await startServer(["upstream"])
  const proxies = []
  for (const wait of WAITS) {
    proxies.push({ wait, server: await startServer(["proxy-busy", upstream.url, String(wait.before), String(wait.after)]) })
  }
  const loader = spawnLoader()
  await nextMessage(loader, "ready")
  const load = loadWith(loader)
  for (const { server } of proxies) await load(server, body, 50, 2)
  const p50s = new Map<(typeof WAITS)[number], Array<number>>(WAITS.map((wait) => [wait, []]))
  for (let round = 0; round < rounds; round++) {
    for (const { server, wait } of proxies) p50s.get(wait)!.push((await load(server, body, 1, seconds)).p50)
  }
  for (const server of [upstream, ...proxies.map((proxy) => proxy.server), { child: loader }]) server.child.send("stop")
  const base = median(p50s.get(WAITS[0]!)!)
  const lines = [
    "",
    `The bare proxy with a busy wait before each upstream request or after its answer, one connection, ${rounds} interleaved rounds of ${seconds} s:`,
    "| busy wait µs, before / after | p50 ms, each round | median | added to no wait, µs | beyond the wait itself, µs |",
    "|---|---|---:|---:|---:|"
  ]
  for (const [wait, values] of p50s) {
    const added = (median(values) - base) * 1000
    lines.push(
      `| ${wait.before} / ${wait.after} | ${values.map((p50) => p50.toFixed(3)).join(", ")} | ${median(values).toFixed(3)} | ${
        added.toFixed(0)
      } | ${(added - wait.before - wait.after).toFixed(0)} |`
    )
  }
  console.log(lines.join("\n"))
}
