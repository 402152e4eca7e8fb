/**
 * How long one big embeddings answer stalls the gateway's event loop
 * (`BENCH_ONLY=embeddings npm run bench`, or `tsx bench/embeddingsStall.ts`):
 * 2,048 inputs at svc/embed's largest dimensions (1,536), on the sandbox, in
 * this process; a probe timer every 5 ms notes the longest gap between its
 * ticks while the call runs, beside the call's own time.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startGateway } from "../test/support/gateway.ts"

export const embeddingsStall = async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-embed-"))
  const database = { env: { SVC_DATA_DIR: dataDir, DATABASE_URL: "" }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) }
  const gateway = await startGateway({ scanResponses: false, database })
  const { key } = await gateway.account({ credit: "100" })
  const input = Array.from({ length: 2048 }, (_, i) => `input ${i} says alpha beta gamma delta epsilon zeta eta`)
  const rows: Array<string> = []
  for (const encoding of ["float", "base64"] as const) {
    let last = performance.now()
    let longest = 0
    const probe = setInterval(() => {
      const now = performance.now()
      longest = Math.max(longest, now - last)
      last = now
    }, 5)
    const started = performance.now()
    const response = await fetch(`${gateway.url}/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "svc/embed", input, dimensions: 1536, encoding_format: encoding })
    })
    const bytes = (await response.arrayBuffer()).byteLength
    const took = performance.now() - started
    clearInterval(probe)
    rows.push(`| ${encoding} | ${response.status} | ${(bytes / 1e6).toFixed(1)} | ${took.toFixed(0)} | ${longest.toFixed(0)} |`)
  }
  await gateway.close()
  await database.drop()
  console.log(["", "| 2,048 × 1,536 embeddings | status | MB | call ms | longest event-loop stall ms |", "|---|---:|---:|---:|---:|", ...rows].join("\n"))
}

if (import.meta.url === `file://${process.argv[1]}`) embeddingsStall().then(() => process.exit(0))
