/**
 * Retrieval (`BENCH_ONLY=retrieval npm run bench`): recall on the evaluation
 * set (test/fixtures/retrieval) for full text, vectors and the hybrid runs
 * use, all questions and the paraphrased half apart; then the latency of one
 * hybrid search over an agent of 10,000 and 100,000 chunks (synthetic text
 * from the set's words, random 256-dimension vectors), on PGlite and, when
 * `DATABASE_URL` names one, on a PostgreSQL server. Knob: BENCH_RETRIEVAL_SIZES
 * (comma-separated chunk counts).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { loadConfig } from "../layers/platform/ConfigLive.ts"
import { DatabaseLive } from "../layers/storage/Database.ts"
import { MigrationsLive } from "../layers/storage/Migrations.ts"
import { AppConfig } from "../services/Config.ts"
import { Retrieval } from "../services/Retrieval.ts"
import { documents, questions } from "../test/fixtures/retrieval/index.ts"
import { TEMPLATE_ENV } from "../test/support/database.ts"
import { startGateway, type TestGateway } from "../test/support/gateway.ts"
import { evaluateRetrieval, scoreTable } from "../test/support/retrievalEval.ts"

const SIZES = (process.env.BENCH_RETRIEVAL_SIZES ?? "10000,100000").split(",").map(Number)
/** Searches timed per size: fewer on the largest, where each takes seconds without a vector index. */
const queriesFor = (size: number) => (size > 20_000 ? 5 : 20)
const DIMENSIONS = 256

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!

/** A migrated embedded database to copy, as the test suite makes one. */
const pgliteTemplate = async () => {
  const template = mkdtempSync(join(tmpdir(), "svc-bench-template-"))
  const config = await Effect.runPromise(loadConfig({ SVC_DATA_DIR: template }, tmpdir()))
  await Effect.runPromise(Effect.scoped(Layer.build(
    MigrationsLive.pipe(Layer.provide(DatabaseLive), Layer.provide(Layer.succeed(AppConfig, config)))
  )))
  return template
}

/** A new agent with one document, over HTTP (all made before the long SQL inserts leave sockets idle). */
const newAgent = async (gateway: TestGateway, key: string, name: string) => {
  const agent = (await gateway.request("POST", "/v1/agents", { key, body: { name, instructions: "" } })).body
  const document = (await gateway.request("POST", `/v1/agents/${agent.id}/documents`, { key, body: { title: "seed", text: "seed text" } })).body
  return { agentId: agent.id as string, documentId: document.id as string }
}

/** Adds `count` synthetic chunks to the agent's document, in batches of SQL. */
const fillAgent = async (gateway: TestGateway, { agentId, documentId }: { agentId: string; documentId: string }, count: number) => {
  const vocabulary = [...new Set(documents.flatMap((doc) => doc.text.toLowerCase().match(/[a-z]+/g) ?? []))]
  const batch = 2_000
  for (let start = 0; start < count; start += batch) {
    const rows = Array.from({ length: Math.min(batch, count - start) }, (_, i) => ({
      id: `chk_bench_${count}_${start + i}`,
      text: Array.from({ length: 60 }, () => vocabulary[Math.floor(Math.random() * vocabulary.length)]).join(" "),
      embedding: Array.from({ length: DIMENSIONS }, () => Math.random() * 2 - 1)
    }))
    await gateway.query(
      `INSERT INTO agent_chunks (id, document_id, agent_id, ordinal, text, embedding)
       SELECT r.id, $1, $2, 0, r.text, r.embedding FROM jsonb_to_recordset($3::jsonb) AS r(id text, text text, embedding real[])`,
      [documentId, agentId, JSON.stringify(rows)]
    )
  }
}

const latency = async (gateway: TestGateway, key: string, label: string) => {
  const lines: Array<string> = []
  const agents = []
  for (const size of SIZES) agents.push(await newAgent(gateway, key, `bench ${size}`))
  for (const [index, size] of SIZES.entries()) {
    const agent = agents[index]!
    await fillAgent(gateway, agent, size)
    const agentId = agent.agentId
    const timed = async (query: (question: string, embedding: Array<number>) => { text: string; embedding: Array<number> | undefined }) => {
      const times: Array<number> = []
      for (const question of questions.slice(0, queriesFor(size))) {
        const asked = query(question.question, Array.from({ length: DIMENSIONS }, () => Math.random() * 2 - 1))
        const started = performance.now()
        await gateway.run(Effect.flatMap(Retrieval, (retrieval) => retrieval.search(agentId, asked.text, asked.embedding, 5)))
        times.push(performance.now() - started)
      }
      times.sort((a, b) => a - b)
      return `${percentile(times, 0.5).toFixed(1)} / ${percentile(times, 0.95).toFixed(1)}`
    }
    const words = await timed((text) => ({ text, embedding: undefined }))
    // No word of "" is indexed: the vector ranking alone.
    const vectors = await timed((_, embedding) => ({ text: "", embedding }))
    const hybrid = await timed((text, embedding) => ({ text, embedding }))
    lines.push(`| ${label} | ${size.toLocaleString("en")} | ${words} | ${vectors} | ${hybrid} |`)
  }
  return lines
}

export const retrievalBench = async () => {
  const serverUrl = process.env.DATABASE_URL
  delete process.env.DATABASE_URL
  const template = await pgliteTemplate()
  process.env[TEMPLATE_ENV] = template
  const rows: Array<string> = []
  try {
    const gateway = await startGateway()
    const { key } = await gateway.account({ credit: "1000", scopes: ["agents", "chat"] })
    const { result } = await evaluateRetrieval(gateway, key)
    console.log(`Retrieval recall on the evaluation set (${documents.length} documents, ${questions.length} questions):\n`)
    console.log(`${scoreTable("All questions", result.all)}\n\n${scoreTable("Paraphrased half", result.paraphrased)}\n`)
    rows.push(...await latency(gateway, key, "PGlite"))
    await gateway.close()
    if (serverUrl !== undefined && serverUrl !== "") {
      process.env.DATABASE_URL = serverUrl
      const server = await startGateway()
      const account = await server.account({ credit: "1000", scopes: ["agents", "chat"] })
      rows.push(...await latency(server, account.key, "PostgreSQL"))
      await server.close()
    }
  } finally {
    rmSync(template, { recursive: true, force: true })
  }
  console.log([
    "Search latency over one agent's chunks, p50 / p95 ms:",
    "| database | chunks | full text | vectors | hybrid |",
    "|---|---|---|---|---|",
    ...rows
  ].join("\n"))
}
