/**
 * Work of a known kind and amount for the bare proxy to do on every call, to
 * calibrate what the gateway's own costs in the phase at hand (role
 * `proxy-burdened`, e.g. `BENCH_ONLY=path BENCH_GATEWAY=proxy-burdened`, with
 * or without `BENCH_UPSTREAM_DELAY_MS`; docs/performance.md, "After session
 * 38"): `BENCH_EXTRA_FUNCTIONS=n` runs n distinct small functions (code, each
 * compiled on its own), `BENCH_EXTRA_KIB=k` allocates about k KiB of small
 * objects that live until the call's answer (memory written),
 * `BENCH_EXTRA_READS=n` reads a field of n long-lived objects a cache line
 * apart (memory read, as a call reads its services' and caches' objects).
 */

/** A function of its own, from source of its own: V8 compiles and optimizes each apart. */
const distinct = (i: number) =>
  new Function("x", `let s = x; for (let k = 0; k < 3; k++) s = (s * 31 + ${i} + k) | 0; const o = { a: s, b: ${i} }; return o.a ^ o.b`) as (
    x: number
  ) => number

/** Long-lived objects; every fourth is read, so that each read is a cache line of its own (they stay, as a service's do). */
const longLived = (count: number) => Array.from({ length: count * 4 }, (_, i) => ({ a: i, b: i, c: i, d: i }))

/** What a call of the proxy does before its upstream request; its result is kept with the call. */
export const burdenOf = (env: Record<string, string | undefined>): () => unknown => {
  const functions = Array.from({ length: Number(env.BENCH_EXTRA_FUNCTIONS ?? 0) }, (_, i) => distinct(i))
  const spread = longLived(Number(env.BENCH_EXTRA_READS ?? 0))
  // ~73 bytes an object here, the array's growth included (`BENCH_ONLY=allocation BENCH_GATEWAY=proxy-burdened`).
  const objects = Math.round(Number(env.BENCH_EXTRA_KIB ?? 0) * 14)
  return () => {
    let x = 1
    for (const f of functions) x = f(x)
    for (let i = 0; i < spread.length; i += 4) x += spread[i]!.a
    const kept: Array<unknown> = []
    for (let i = 0; i < objects; i++) kept.push({ a: i, b: x, c: kept })
    return kept
  }
}
