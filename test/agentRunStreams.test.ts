/**
 * Streamed agent runs over HTTP (`?stream=true`), against a fake upstream
 * that speaks OpenAI's SSE over a real socket: the contract's events in
 * order, the completed record as billed; a client that leaves after the
 * first delta still gets its turns kept and a receipt for what was
 * generated (and the upstream request is cancelled); an upstream that breaks
 * mid-stream ends the run with an `error` event after a receipt for what was
 * delivered; and Σ receipts = the balance's drop throughout.
 */
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let upstream: FakeOpenAi
let gateway: TestGateway

beforeAll(async () => {
  upstream = await startFakeOpenAi()
  gateway = await startGateway({
    config: {
      routing: { health: { failureThreshold: 1000 }, retry: { maxAttempts: 1 } },
      models: [{
        id: "svc/acme-large",
        context: 128000,
        pricing: { input: "0.50", output: "1.50" },
        modalities: ["text"],
        capabilities: ["chat", "streaming"]
      }],
      providers: [
        {
          id: "acme",
          plugin: "openai-compatible",
          baseUrl: upstream.baseUrl,
          apiKeyEnv: "ACME_KEY",
          timeoutMs: 3000,
          deployments: [{ model: "svc/acme-large", upstreamModel: "acme-large-v7", cost: { input: "0.40", output: "1.20" } }]
        },
        { id: "sandbox", plugin: "sandbox", deployments: [{ model: "svc/embed" }] }
      ]
    },
    env: { ACME_KEY: "sk-acme" }
  })
}, 120_000)

afterAll(async () => {
  await gateway?.close()
  await upstream?.close()
})

beforeEach(() => upstream.behave({}))

const nanos = (usd: string) => {
  const [whole, fraction = ""] = usd.split(".")
  return BigInt(whole!) * 1_000_000_000n + BigInt(fraction.padEnd(9, "0"))
}

/** What each account starts with; its receipts (knowledge ingestion, runs) must add up to its drop. */
const CREDIT = 5_000_000_000n

const newAgent = async () => {
  const account = await gateway.account({ credit: "5", scopes: ["agents", "chat", "monitoring"] })
  const agent = await gateway.request("POST", "/v1/agents", {
    key: account.key,
    body: {
      name: "Streamer",
      instructions: "Answer briefly.",
      routing: { model: "svc/acme-large" },
      knowledge: [{ title: "Tides", text: "# Tides\n\nThe moon's pull raises the tides twice a day." }]
    }
  })
  expect(agent.status).toBe(200)
  return { account, agentId: agent.body.id as string }
}

interface Event {
  readonly event: string
  readonly data: any
}

/** Parses a complete SSE body into its events. */
const parseEvents = (text: string): Array<Event> =>
  text.split("\n\n").filter((block) => block.trim() !== "").map((block) => {
    const lines = block.split("\n")
    const event = lines.find((line) => line.startsWith("event: "))!.slice("event: ".length)
    const data = JSON.parse(lines.find((line) => line.startsWith("data: "))!.slice("data: ".length))
    return { event, data }
  })

const streamRun = async (key: string, body: unknown) => {
  const response = await fetch(`${gateway.url}/v1/agents/runs?stream=true`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  return { response, events: response.headers.get("content-type")?.includes("text/event-stream") ? parseEvents(text) : [] }
}

const balanceOf = async (accountId: string) => nanos((await gateway.request("GET", `/v1/admin/accounts/${accountId}`)).body.balance_usd)

const receiptsOf = async (accountId: string) =>
  (await gateway.query<{ total_usd: string }>("SELECT total_usd::text FROM receipts WHERE account_id = $1", [accountId]))
    .reduce((sum, row) => sum + nanos(row.total_usd), 0n)

describe("streamed agent runs", () => {
  it("sends run.created, sources, output.delta…, run.completed — the record as billed", async () => {
    const { account, agentId } = await newAgent()
    const credit = CREDIT
    const { events, response } = await streamRun(account.key, { agent: agentId, input: "Why are there tides?" })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    const names = events.map((event) => event.event)
    expect(names[0]).toBe("run.created")
    expect(names[1]).toBe("sources")
    expect(names.at(-1)).toBe("run.completed")
    expect(names.slice(2, -1).every((name) => name === "output.delta")).toBe(true)
    expect(names.length).toBeGreaterThan(3)

    const created = events[0]!.data
    expect(created.agent_id).toBe(agentId)
    expect(created.conversation_id).toMatch(/^conv_/)
    expect(created.receipt_id).toBe(response.headers.get("x-svc-receipt-id"))
    expect(events[1]!.data[0]).toMatchObject({ title: "Tides" })
    const completed = events.at(-1)!.data
    expect(completed.output).toBe(events.slice(2, -1).map((event) => event.data.text).join(""))
    expect(completed.conversation_id).toBe(created.conversation_id)
    expect(completed.receipt_id).toBe(created.receipt_id)
    expect(completed.id).toMatch(/^msg_/)
    expect(completed.route.model).toBe("svc/acme-large")

    const receipt = (await gateway.request("GET", `/v1/receipts/${completed.receipt_id}`, { key: account.key })).body
    expect(receipt.line_items.map((item: any) => item.step)).toEqual(["query_embedding", "generation"])
    expect(receipt.usage).toEqual(completed.usage)
    expect(credit - await balanceOf(account.id)).toBe(await receiptsOf(account.id))

    // The turns were kept: a continued run sends them to the model.
    const next = await streamRun(account.key, { agent: agentId, input: "And twice a day?", conversation_id: created.conversation_id })
    expect(next.events.at(-1)!.event).toBe("run.completed")
    const sent = upstream.requests.at(-1)!.body as any
    expect(sent.messages.map((message: any) => message.role)).toEqual(["system", "user", "assistant", "user"])
    expect(sent.messages[2].content).toBe(completed.output)
  })

  it("keeps the turns and bills what was generated when the client leaves after the first delta", async () => {
    const { account, agentId } = await newAgent()
    const credit = CREDIT
    upstream.behave({ chunkDelayMs: 200 })
    const aborts = upstream.clientAborts()
    const conversationId = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(`${gateway.url}/v1/agents/runs?stream=true`, {
        method: "POST",
        headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json" }
      }, (res) => {
        let text = ""
        res.on("data", (data: Buffer) => {
          text += data.toString()
          const events = text.endsWith("\n\n") ? parseEvents(text) : []
          if (events.some((event) => event.event === "output.delta")) {
            req.destroy()
            resolve(events[0]!.data.conversation_id)
          }
        })
      })
      req.on("error", (error) => (error.message.includes("socket hang up") ? undefined : reject(error)))
      req.end(JSON.stringify({ agent: agentId, input: "Tell me a long story about the tides." }))
    })
    await upstream.waitForAborts(aborts + 1)
    // The run settles after the cut: its receipt and both turns appear.
    const deadline = Date.now() + 5000
    let turns: ReadonlyArray<{ role: string; content: string; receipt_id: string | null }> = []
    while (Date.now() < deadline && turns.length < 2) {
      turns = await gateway.query("SELECT role, content, receipt_id FROM agent_turns WHERE conversation_id = $1 ORDER BY seq", [conversationId])
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(turns.map((turn) => turn.role)).toEqual(["user", "assistant"])
    expect(turns[1]!.content.length).toBeGreaterThan(0)
    const [receipt] = await gateway.query<{ output_tokens: number }>("SELECT output_tokens FROM receipts WHERE id = $1", [turns[1]!.receipt_id])
    expect(receipt!.output_tokens).toBeGreaterThan(0)
    expect(credit - await balanceOf(account.id)).toBe(await receiptsOf(account.id))
  })

  it("ends with an error event after a receipt for what was delivered when the upstream breaks mid-stream", async () => {
    const { account, agentId } = await newAgent()
    const credit = CREDIT
    upstream.behave({ resetAfterChunks: 2 })
    const { events, response } = await streamRun(account.key, { agent: agentId, input: "Why are there tides?" })
    expect(response.status).toBe(200)
    const names = events.map((event) => event.event)
    expect(names.slice(0, 2)).toEqual(["run.created", "sources"])
    expect(names).toContain("output.delta")
    expect(names.at(-1)).toBe("error")
    expect(names).not.toContain("run.completed")
    expect(events.at(-1)!.data.error.code).toBe("upstream_error")
    const receiptId = events[0]!.data.receipt_id
    const receipt = (await gateway.request("GET", `/v1/receipts/${receiptId}`, { key: account.key })).body
    expect(receipt.usage.output_tokens).toBeGreaterThan(0)
    expect(credit - await balanceOf(account.id)).toBe(await receiptsOf(account.id))
  })

  it("bills nothing and gives the conversation back when the upstream fails before answering", async () => {
    const { account, agentId } = await newAgent()
    const credit = CREDIT
    upstream.behave({ status: 500 })
    const { response } = await streamRun(account.key, { agent: agentId, input: "Why are there tides?" })
    expect(response.status).toBe(502)
    // Only the knowledge's ingestion was billed.
    expect(credit - await balanceOf(account.id)).toBe(await receiptsOf(account.id))
    expect((await gateway.query("SELECT 1 FROM receipts WHERE endpoint = '/v1/agents/runs' AND account_id = $1", [account.id])).length).toBe(0)
    const agent = (await gateway.request("GET", `/v1/agents/${agentId}`, { key: account.key })).body
    expect(agent.conversation_count).toBe(0)
  })
})
