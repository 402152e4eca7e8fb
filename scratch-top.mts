import { readFileSync } from "node:fs"
const p = JSON.parse(readFileSync(process.argv[2]!, "utf8"))
const byId = new Map<number, any>(p.nodes.map((n: any) => [n.id, n]))
const self = new Map<number, number>()
const dt = p.timeDeltas as number[]
for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + (dt[i] ?? 0))
const agg = new Map<string, number>()
for (const [id, t] of self) {
  const n = byId.get(id); const cf = n.callFrame
  const key = `${cf.functionName || "(anon)"} ${cf.url.replace(/.*node_modules\//, "").replace(/^file:\/\/\/work\/main\//, "")}:${cf.lineNumber}`
  agg.set(key, (agg.get(key) ?? 0) + t)
}
const rows = [...agg].sort((a, b) => b[1] - a[1]).slice(0, Number(process.argv[3] ?? 50))
for (const [k, t] of rows) console.log((t / 1000).toFixed(0).padStart(7), k)
