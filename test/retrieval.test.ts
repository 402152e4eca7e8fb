/**
 * Hybrid retrieval on a real database: the query's stemmed words and its
 * embedding each rank the agent's chunks, fused by reciprocal rank; the best
 * chunk comes from the document that answers, with its title and text; only
 * the agent's own chunks are candidates; `k` is respected; a query with no
 * indexed word still finds chunks by meaning. The fusion itself is checked
 * as a function.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cosine, fuse, RRF_K } from "../layers/knowledge/fusion.ts"
import { EmbeddingsGateway } from "../services/EmbeddingsGateway.ts"
import { Retrieval } from "../services/Retrieval.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
let account: { id: string; key: string }
let agentId: string
let twinId: string

const KNOWLEDGE = [
  {
    title: "Invoices",
    text: "# Invoices\n\nEvery invoice is billed on the first day of the month. Refunds are credited to the prepaid balance."
  },
  {
    title: "Rate limits",
    text: "# Rate limits\n\nEach key may send sixty requests per minute. Requests over the limit are answered with status 429."
  },
  {
    title: "Privacy",
    text: "# Privacy classes\n\nConfidential calls run only in attested runtimes. Prompts of stronger classes are never stored in plain text."
  }
]

beforeAll(async () => {
  gateway = await startGateway()
  account = await gateway.account({ credit: "5", scopes: ["agents", "chat"] })
  const create = async () =>
    (await gateway.request("POST", "/v1/agents", { key: account.key, body: { name: "kb", instructions: "", knowledge: KNOWLEDGE } })).body.id
  agentId = await create()
  // A twin with the same knowledge: its chunks must never be found for the first agent.
  twinId = await create()
}, 120_000)

afterAll(() => gateway?.close())

const search = (agent: string, query: string, k = 5) =>
  gateway.run(Effect.gen(function*() {
    const principal = { keyId: "key_test", accountId: account.id, scopes: ["chat" as const] }
    const { response } = yield* (yield* EmbeddingsGateway).embed({ model: "svc/embed", input: query }, principal)
    return yield* (yield* Retrieval).search(agent, query, response.data[0]!.embedding as ReadonlyArray<number>, k)
  }))

describe("hybrid retrieval", () => {
  it("finds the chunk that answers, stemmed, with its document's title and text", async () => {
    const sources = await search(agentId, "How are refunds billed?")
    expect(sources[0]).toMatchObject({ title: "Invoices" })
    expect(sources[0]!.text).toContain("Refunds are credited")
    expect(sources[0]!.documentId).toMatch(/^doc_/)
    expect(sources[0]!.chunkId).toMatch(/^chk_/)
    expect((await search(agentId, "what happens when I exceed the request limit"))[0]!.title).toBe("Rate limits")
    expect((await search(agentId, "attestation of confidential runtime"))[0]!.title).toBe("Privacy")
  })

  it("ranks best first, respects k, and looks only at the agent's own chunks", async () => {
    const sources = await search(agentId, "requests per minute", 2)
    expect(sources).toHaveLength(2)
    expect(sources[0]!.score).toBeGreaterThanOrEqual(sources[1]!.score)
    const own = await gateway.query<{ id: string }>("SELECT id FROM agent_chunks WHERE agent_id = $1", [agentId])
    const ownIds = new Set(own.map((row) => row.id))
    for (const source of await search(agentId, "invoice limit privacy", 10)) expect(ownIds.has(source.chunkId)).toBe(true)
    expect((await search(twinId, "requests per minute", 1))[0]!.chunkId).not.toBe(sources[0]!.chunkId)
  })

  it("still finds chunks by meaning when no word of the query is indexed", async () => {
    const sources = await search(agentId, "the of and", 3)
    expect(sources).toHaveLength(3)
  })
})

describe("reciprocal rank fusion", () => {
  it("adds weight/(K + rank) per ranking, so agreement wins and the lighter ranking counts less", () => {
    const fused = fuse([{ ids: ["a", "b", "c"], weight: 1 }, { ids: ["b", "d"], weight: 0.6 }])
    expect(fused.map((entry) => entry.id)).toEqual(["b", "a", "c", "d"])
    expect(fused[0]!.score).toBeCloseTo(1 / (RRF_K + 2) + 0.6 / (RRF_K + 1), 12)
    // Equal weights: the second ranking's first beats the first ranking's third.
    expect(fuse([{ ids: ["a", "b", "c"], weight: 1 }, { ids: ["d"], weight: 1 }]).map((entry) => entry.id)).toEqual(["a", "d", "b", "c"])
    expect(fuse([])).toEqual([])
  })

  it("measures cosine similarity, and 0 for a zero vector", () => {
    expect(cosine([1, 0], [1, 0])).toBeCloseTo(1, 12)
    expect(cosine([1, 0], [0, 1])).toBeCloseTo(0, 12)
    expect(cosine([1, 2], [-1, -2])).toBeCloseTo(-1, 12)
    expect(cosine([0, 0], [1, 1])).toBe(0)
  })
})
