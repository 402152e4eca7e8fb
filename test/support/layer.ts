/**
 * `layer` of @effect/vitest, without its side effect on every later test.
 * Its `layer` (0.30) assigns the block's `effect`, `scoped`, `layer`, `prop`
 * and `flakyTest` onto Vitest's single `it` object, so every `it.effect`
 * collected after the block in the same worker ran on the block's runtime: its
 * services, and its TestClock where the block had moved it. That stayed
 * hidden while each test file had its own module graph; with workers shared
 * between files (vitest.config.ts, `isolate: false`) it broke TestClock tests
 * in other files. Here the block's tests get its methods through a view of
 * their own, and the shared `it` gets its plain methods back before the
 * block's tests are collected. (Effect 4's @effect/vitest no longer mutates
 * the shared object.)
 */
import { it as shared, layer as effectLayer, makeMethods } from "@effect/vitest"

const BLOCK_METHODS = ["effect", "scoped", "layer", "prop", "flakyTest"] as const

export const layer: typeof effectLayer = (layer_, options) => (...args: ReadonlyArray<unknown>) => {
  const body = args[args.length - 1] as (it: unknown) => void
  const isolated = (it: Record<string, unknown>) => {
    const own = new Map<PropertyKey, unknown>(BLOCK_METHODS.map((name) => [name, it[name]]))
    makeMethods(shared)
    return body(new Proxy(shared, { get: (target, key, receiver) => own.has(key) ? own.get(key) : Reflect.get(target, key, receiver) }))
  }
  const run = effectLayer(layer_, options) as (...args: ReadonlyArray<unknown>) => void
  return args.length === 1 ? run(isolated) : run(args[0], isolated)
}
