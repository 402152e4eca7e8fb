/**
 * Vector ranking in the database ranks an agent's chunks exactly as cosine
 * similarity computed in JavaScript does, on the same data: with pgvector
 * (PGlite always has it) and with plain SQL (a PostgreSQL server without it,
 * as on CI), so both suite runs check one path each.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cosine } from "../layers/knowledge/fusion.ts"
import { Retrieval } from "../services/Retrieval.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway

beforeAll(async () => {
  gateway = await startGateway()
}, 120_000)
afterAll(() => gateway?.close())

const DIMENSIONS = 64
const random = () => Array.from({ length: DIMENSIONS }, () => Math.random() * 2 - 1)

const hasVectorTable = async () =>
  (await gateway.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'agent_chunk_vectors'")).length === 1

describe("vector search", () => {
  it("uses pgvector wherever the database offers it", async () => {
    const [{ offered }] = await gateway.query<{ offered: boolean }>(
      "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS offered"
    )
    if (process.env.DATABASE_URL === undefined || process.env.DATABASE_URL === "") expect(offered).toBe(true)
    expect(await hasVectorTable()).toBe(offered)
  })

  it("ranks exactly as cosine similarity computed here does, on the same chunks", async () => {
    const { key } = await gateway.account({ credit: "5", scopes: ["agents"] })
    const agent = (await gateway.request("POST", "/v1/agents", { key, body: { name: "vectors", instructions: "" } })).body
    const document = (await gateway.request("POST", `/v1/agents/${agent.id}/documents`, { key, body: { title: "seed", text: "seed" } })).body
    const chunks = Array.from({ length: 2000 }, (_, i) => ({ id: `chk_rank_${String(i).padStart(4, "0")}`, text: "filler", embedding: random() }))
    await gateway.query(
      `INSERT INTO agent_chunks (id, document_id, agent_id, ordinal, text, embedding)
       SELECT r.id, $1, $2, 0, r.text, r.embedding FROM jsonb_to_recordset($3::jsonb) AS r(id text, text text, embedding real[])`,
      [document.id, agent.id, JSON.stringify(chunks)]
    )
    // As stored: real[] keeps single precision, and both rankings read the stored values.
    const stored = await gateway.query<{ id: string; embedding: Array<number> }>(
      "SELECT id, embedding FROM agent_chunks WHERE agent_id = $1 AND array_length(embedding, 1) = $2",
      [agent.id, DIMENSIONS]
    )
    for (let query = 0; query < 20; query++) {
      const vector = random()
      const scanned = stored
        .map((chunk) => ({ id: chunk.id, similarity: cosine(vector, chunk.embedding) }))
        .sort((a, b) => b.similarity - a.similarity || (a.id < b.id ? -1 : 1))
        .slice(0, 20)
        .map((chunk) => chunk.id)
      // No word of "" is indexed: the fused ranking is the vector ranking alone.
      const searched = await gateway.run(Effect.flatMap(Retrieval, (retrieval) => retrieval.search(agent.id, "", vector, 20)))
      expect(searched.map((source) => source.chunkId)).toEqual(scanned)
    }
  })
})
