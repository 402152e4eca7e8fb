/**
 * Where a CPU profile's busy time goes (`npx tsx bench/profileStages.ts <file.cpuprofile>`): self
 * time by package (Effect's runtime, Node's internals, pg, undici…) and by file of ours. Run it on
 * the gateway's profile from `BENCH_ONLY=table BENCH_CPU_PROF=<dir> npm run bench`. Stacks do not
 * say which pipeline stage a sample served: Effect runs every stage's continuations from its own
 * scheduler, so a stage's cost is Effect's time as much as its own file's.
 */
import { readFileSync } from "node:fs"

interface Node {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string }
}
interface Profile {
  readonly nodes: ReadonlyArray<Node>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const OURS = /\/((?:src|layers|services|plugins)\/[^?]*\.ts)/
const IDLE = new Set(["(idle)", "(program)", "(garbage collector)"])

const placeOf = (node: Node) => {
  const { functionName, url } = node.callFrame
  if (url === "") return IDLE.has(functionName) ? functionName : "(native)"
  if (url.startsWith("node:")) return "node internals"
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (match !== null) return match[1]!
  return OURS.exec(url)?.[1] ?? url
}

const [file] = process.argv.slice(2)
const profile: Profile = JSON.parse(readFileSync(file!, "utf8"))
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const self = new Map<string, number>()
profile.samples.forEach((id, i) => {
  const place = placeOf(byId.get(id)!)
  self.set(place, (self.get(place) ?? 0) + (profile.timeDeltas[i] ?? 0))
})
const idle = self.get("(idle)") ?? 0
const total = [...self.values()].reduce((sum, micros) => sum + micros, 0)
const busy = total - idle
console.log(`Profile of ${(total / 1e6).toFixed(1)} s, ${(busy / 1e6).toFixed(1)} s busy (not idle)`)
const table = (title: string, rows: ReadonlyArray<readonly [string, number]>) => {
  console.log(`\n| ${title} | ms | share of busy |\n|---|---:|---:|`)
  for (const [name, micros] of rows) console.log(`| ${name} | ${(micros / 1000).toFixed(0)} | ${((100 * micros) / busy).toFixed(1)}% |`)
}
const sorted = [...self].filter(([name]) => name !== "(idle)").sort((a, b) => b[1] - a[1])
table("self time by package", sorted.filter(([name]) => !OURS.test(`/${name}`)).slice(0, 15))
const ours = sorted.filter(([name]) => OURS.test(`/${name}`))
table("self time by file of ours", ours.slice(0, 20))
console.log(`\nOurs in all: ${(ours.reduce((sum, [, micros]) => sum + micros, 0) / 1000).toFixed(0)} ms`)
