/**
 * Agent runs over HTTP (spec 4.1, 7 "Agent runs"): an answer with its
 * sources, one receipt per run with a line item per billable step, a
 * conversation created and continued (its history reaching the model), the
 * conversation cap also under concurrent creation, the deprecated path's
 * headers, and the refusals — 400, 401, 402, 404, 429 — that write nothing.
 */
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway

beforeAll(async () => {
  // Standard-class text is kept, so a run's transcript shows what reached the model.
  gateway = await startGateway({ config: { promptStorage: { standardRoute: true } } })
}, 120_000)

afterAll(() => gateway?.close())

const KNOWLEDGE = [
  {
    title: "Returns",
    text: "# Returns\n\nA parcel may be returned within 30 days of delivery. Print the label from your order page and drop the parcel at any post office."
  },
  {
    title: "Shipping",
    text: "# Shipping\n\nOrders leave our warehouse within two working days. Express shipping arrives the next day in most cities."
  }
]

const nanos = (usd: string) => {
  const [whole, fraction = ""] = usd.split(".")
  return BigInt(whole!) * 1_000_000_000n + BigInt(fraction.padEnd(9, "0"))
}

const balanceOf = async (accountId: string) => nanos((await gateway.request("GET", `/v1/admin/accounts/${accountId}`)).body.balance_usd)

/** An account whose key may manage agents and run them, with one agent that knows `KNOWLEDGE`. */
const agentWithKnowledge = async (options: { credit?: string; cap?: number } = {}) => {
  const account = await gateway.account({ credit: options.credit ?? "5", scopes: ["agents", "chat", "monitoring"] })
  const agent = await gateway.request("POST", "/v1/agents", {
    key: account.key,
    body: {
      name: "Shop help",
      instructions: "You answer questions about the shop.",
      knowledge: KNOWLEDGE,
      ...(options.cap !== undefined ? { conversation_cap: options.cap } : {})
    }
  })
  expect(agent.status).toBe(200)
  return { account, agentId: agent.body.id as string }
}

const run = (key: string | null, body: unknown, headers?: Record<string, string>) =>
  gateway.request("POST", "/v1/agents/runs", { key, body, ...(headers ? { headers } : {}) })

const countRows = async (table: string) => Number((await gateway.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`))[0]!.n)

describe("agent runs", () => {
  it("answers with sources, one receipt with line items, and a new conversation", async () => {
    const { account, agentId } = await agentWithKnowledge()
    const before = await balanceOf(account.id)
    const answer = await run(account.key, { agent: agentId, input: "How many days do I have to return a parcel?" })
    expect(answer.status).toBe(200)
    const record = answer.body
    expect(Object.keys(record).sort()).toEqual(
      ["agent_id", "conversation_id", "id", "output", "privacy", "receipt_id", "route", "sources", "usage"].sort()
    )
    expect(record.id).toMatch(/^msg_/)
    expect(record.agent_id).toBe(agentId)
    expect(record.conversation_id).toMatch(/^conv_/)
    expect(record.output.length).toBeGreaterThan(0)
    expect(record.route.model).toMatch(/^svc\//)
    expect(record.usage.input_tokens).toBeGreaterThan(0)
    expect(record.privacy.class).toBe("standard_route")
    // The returns document ranks first, and each source carries what a citation shows.
    expect(record.sources.length).toBeGreaterThan(0)
    expect(record.sources[0]).toMatchObject({ title: "Returns" })
    for (const source of record.sources) {
      expect(source.documentId).toMatch(/^doc_/)
      expect(source.chunkId).toMatch(/^chk_/)
      expect(typeof source.score).toBe("number")
      expect(source.text.length).toBeGreaterThan(0)
    }
    expect(answer.headers.get("x-svc-receipt-id")).toBe(record.receipt_id)

    // One receipt: the query's embedding and the generation, summing to what was charged.
    const receipt = (await gateway.request("GET", `/v1/receipts/${record.receipt_id}`, { key: account.key })).body
    expect(receipt.endpoint).toBe("/v1/agents/runs")
    expect(receipt.line_items.map((item: any) => item.step)).toEqual(["query_embedding", "generation"])
    expect(receipt.line_items[0].model).toBe("svc/embed")
    expect(receipt.line_items[0].usage.input_tokens).toBeGreaterThan(0)
    expect(receipt.line_items[1].model).toBe(record.route.model)
    expect(receipt.line_items[1].usage).toEqual(record.usage)
    const sum = receipt.line_items.reduce((total: bigint, item: any) => total + nanos(item.cost.total_usd), 0n)
    expect(sum).toBe(nanos(receipt.cost.total_usd))
    expect(nanos(receipt.line_items[0].cost.total_usd)).toBeGreaterThan(0n)
    expect(before - await balanceOf(account.id)).toBe(nanos(receipt.cost.total_usd))

    // The knowledge reached the model in the system message.
    const transcript = (await gateway.request("GET", `/v1/receipts/${record.receipt_id}/transcript`, { key: account.key })).body
    expect(JSON.stringify(transcript.messages)).toContain("within 30 days of delivery")
  })

  it("continues a conversation: the same conversation, its history sent to the model", async () => {
    const { account, agentId } = await agentWithKnowledge()
    const first = await run(account.key, { agent: agentId, input: "When do orders leave the warehouse?" })
    const second = await run(account.key, {
      agent: agentId,
      input: "And how fast is express?",
      conversation_id: first.body.conversation_id
    })
    expect(second.status).toBe(200)
    expect(second.body.conversation_id).toBe(first.body.conversation_id)
    expect(second.body.id).not.toBe(first.body.id)
    const transcript = (await gateway.request("GET", `/v1/receipts/${second.body.receipt_id}/transcript`, { key: account.key })).body
    const roles = transcript.messages.map((message: any) => message.role)
    expect(roles).toEqual(["system", "user", "assistant", "user"])
    expect(transcript.messages[1].content).toBe("When do orders leave the warehouse?")
    expect(transcript.messages[2].content).toBe(first.body.output)
    const agent = (await gateway.request("GET", `/v1/agents/${agentId}`, { key: account.key })).body
    expect(agent.conversation_count).toBe(1)
  })

  it("works through the official openai client", async () => {
    const { account, agentId } = await agentWithKnowledge()
    const client = new OpenAI({ apiKey: account.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const record: any = await client.post("/agents/runs", { body: { agent: agentId, input: "Can I return a parcel?" } })
    expect(record.agent_id).toBe(agentId)
    expect(record.sources.length).toBeGreaterThan(0)
    const missing = await client.post("/agents/runs", { body: { agent: "agt_nope", input: "hi" } }).catch((error) => error)
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError)
  })

  it("answers on the deprecated path with Deprecation, Sunset and Link", async () => {
    const { account, agentId } = await agentWithKnowledge()
    const answer = await gateway.request("POST", `/v1/agents/${agentId}/chat`, { key: account.key, body: { input: "Shipping times?" } })
    expect(answer.status).toBe(200)
    expect(answer.body.agent_id).toBe(agentId)
    expect(answer.headers.get("deprecation")).toBe("true")
    expect(new Date(answer.headers.get("sunset")!).toUTCString()).toBe(answer.headers.get("sunset"))
    expect(answer.headers.get("link")).toBe("</v1/agents/runs>; rel=\"successor-version\"")
    // Refusals say so too, and a stream.
    const missing = await gateway.request("POST", "/v1/agents/agt_unknown/chat", { key: account.key, body: { input: "hi" } })
    expect(missing.status).toBe(404)
    expect(missing.headers.get("deprecation")).toBe("true")
    const streamed = await fetch(`${gateway.url}/v1/agents/${agentId}/chat?stream=true`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json" },
      body: JSON.stringify({ input: "Shipping times?" })
    })
    expect(streamed.headers.get("sunset")).toBe(answer.headers.get("sunset"))
    expect(await streamed.text()).toContain("event: run.completed")
  })

  it("caps conversations per agent: the first over the cap is 429, and continuing one still works", async () => {
    const { account, agentId } = await agentWithKnowledge({ cap: 2 })
    const first = await run(account.key, { agent: agentId, input: "one" })
    expect((await run(account.key, { agent: agentId, input: "two" })).status).toBe(200)
    const receipts = await countRows("receipts")
    const over = await run(account.key, { agent: agentId, input: "three" })
    expect(over.status).toBe(429)
    expect(over.body.error.code).toBe("conversation_limit_exceeded")
    expect(await countRows("receipts")).toBe(receipts)
    const continued = await run(account.key, { agent: agentId, input: "more", conversation_id: first.body.conversation_id })
    expect(continued.status).toBe(200)
  })

  it("gives the last slot to one of many concurrent new conversations", async () => {
    const { account, agentId } = await agentWithKnowledge({ cap: 3 })
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => run(account.key, { agent: agentId, input: `question ${i}` })))
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429, 429, 429])
    const agent = (await gateway.request("GET", `/v1/agents/${agentId}`, { key: account.key })).body
    expect(agent.conversation_count).toBe(3)
    const [{ n }] = await gateway.query<{ n: string }>("SELECT count(*)::text AS n FROM agent_conversations WHERE agent_id = $1", [agentId])
    expect(Number(n)).toBe(3)
  })

  it.skipIf(!process.env.DATABASE_URL)(
    process.env.DATABASE_URL
      ? "gives the last slot to one run when two gateways on one database race for it"
      : "gives the last slot to one run when two gateways race (skipped: needs DATABASE_URL — PGlite serves one process only)",
    async () => {
      const { account, agentId } = await agentWithKnowledge({ cap: 2 })
      const other = await startGateway({ database: gateway.database })
      try {
        const ask = (target: TestGateway, i: number) =>
          target.request("POST", "/v1/agents/runs", { key: account.key, body: { agent: agentId, input: `race ${i}` } })
        const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => ask(i % 2 === 0 ? gateway : other, i)))
        expect(answers.filter((answer) => answer.status === 200)).toHaveLength(2)
        expect(answers.filter((answer) => answer.status === 429)).toHaveLength(8)
        const [{ n }] = await gateway.query<{ n: string }>("SELECT count(*)::text AS n FROM agent_conversations WHERE agent_id = $1", [agentId])
        expect(Number(n)).toBe(2)
      } finally {
        await other.close()
      }
    }
  )

  describe("refusals write nothing", () => {
    const refusals: ReadonlyArray<[string, (ids: { key: string; agentId: string; otherAgent: string; otherConversation: string }) => Promise<any>, number, string]> = [
      ["bad JSON", ({ key }) => gateway.request("POST", "/v1/agents/runs", { key, body: "{\"agent\": " }), 400, "invalid_request"],
      ["no agent", ({ key }) => run(key, { input: "hi" }), 400, "invalid_request"],
      ["no input", ({ agentId, key }) => run(key, { agent: agentId }), 400, "invalid_request"],
      ["8001 characters", ({ agentId, key }) => run(key, { agent: agentId, input: "x".repeat(8001) }), 400, "invalid_request"],
      ["no key", ({ agentId }) => run(null, { agent: agentId, input: "hi" }), 401, "unauthorized"],
      ["an unknown agent", ({ key }) => run(key, { agent: "agt_unknown", input: "hi" }), 404, "not_found"],
      ["another account's agent", ({ key, otherAgent }) => run(key, { agent: otherAgent, input: "hi" }), 404, "not_found"],
      ["an unknown conversation", ({ agentId, key }) => run(key, { agent: agentId, input: "hi", conversation_id: "conv_unknown" }), 404, "not_found"],
      ["another agent's conversation", ({ agentId, key, otherConversation }) =>
        run(key, { agent: agentId, input: "hi", conversation_id: otherConversation }), 404, "not_found"]
    ]
    let ids: { key: string; agentId: string; otherAgent: string; otherConversation: string }
    beforeAll(async () => {
      const mine = await agentWithKnowledge()
      const other = await agentWithKnowledge()
      const otherRun = await run(other.account.key, { agent: other.agentId, input: "hello" })
      ids = { key: mine.account.key, agentId: mine.agentId, otherAgent: other.agentId, otherConversation: otherRun.body.conversation_id }
    })
    const snapshot = async () =>
      JSON.stringify(await Promise.all(["reservations", "receipts", "agent_conversations", "agent_turns", "ledger_entries"].map(countRows)))

    for (const [name, send, status, code] of refusals) {
      it(`${name} → ${status} ${code}`, async () => {
        const before = await snapshot()
        const answer = await send(ids)
        expect(answer.status).toBe(status)
        expect(answer.body.error.code).toBe(code)
        expect(await snapshot()).toBe(before)
      })
    }

    it("a key without the chat scope → 401", async () => {
      const agentsOnly = await gateway.account({ scopes: ["agents"] })
      const answer = await run(agentsOnly.key, { agent: ids.agentId, input: "hi" })
      expect(answer.status).toBe(401)
    })

    it("8000 characters outside the BMP are 8000 characters, not 16000", async () => {
      const answer = await run(ids.key, { agent: ids.agentId, input: "😀".repeat(8000) })
      expect(answer.status).toBe(200)
    })

    it("an empty balance → 402, and no conversation is started", async () => {
      const { account, agentId } = await agentWithKnowledge({ credit: "0.001" })
      await gateway.request("POST", `/v1/admin/accounts/${account.id}/credits`, { body: { amount_usd: "-0.001", reference: "drain" } })
      const before = await snapshot()
      const answer = await run(account.key, { agent: agentId, input: "hi" })
      expect(answer.status).toBe(402)
      expect(answer.body.error.code).toBe("insufficient_funds")
      expect(await snapshot()).toBe(before)
    })
  })
})
