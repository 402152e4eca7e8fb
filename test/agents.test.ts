/**
 * Managing agents and their knowledge over HTTP (scope `agents`): creation
 * with a preset checked against the catalogue and knowledge embedded (billed,
 * with receipts), lists with cursors, documents chunked and stored with their
 * vectors, deletion that takes chunks with it, another account's agent as
 * 404, and the refusals: wrong scope, bad presets, empty text, no money.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway

beforeAll(async () => {
  gateway = await startGateway()
}, 120_000)

afterAll(() => gateway?.close())

const MANUAL = [
  "# Installing",
  "",
  "Run the installer with administrator rights. It asks for a folder and copies the files there.",
  "",
  "## On Linux",
  "",
  ...Array.from({ length: 30 }, (_, i) => `Step ${i + 1} of the Linux setup configures part ${i + 1} of the service and checks it.`),
  "",
  "# Billing",
  "",
  "Every call is billed from the prepaid balance, and each call has a receipt."
].join("\n")

const balanceOf = async (accountId: string) => (await gateway.request("GET", `/v1/admin/accounts/${accountId}`)).body.balance_usd as string

const nanos = (usd: string) => {
  const [whole, fraction = ""] = usd.split(".")
  return BigInt(whole!) * 1_000_000_000n + BigInt(fraction.padEnd(9, "0"))
}

const receiptTotal = async (key: string, receiptId: string) =>
  nanos((await gateway.request("GET", `/v1/receipts/${receiptId}`, { key })).body.cost.total_usd)

describe("agents", () => {
  it("creates an agent with its knowledge embedded, billed to the caller with a receipt per document", async () => {
    const account = await gateway.account({ credit: "5", scopes: ["agents", "monitoring"] })
    const before = nanos(await balanceOf(account.id))
    const created = await gateway.request("POST", "/v1/agents", {
      key: account.key,
      body: {
        name: "Support",
        instructions: "Answer from the manual.",
        routing: { model: "svc/pro", models: ["svc/balanced"], route: "fallback", privacy: { class: "standard_route" } },
        knowledge: [{ title: "Manual", text: MANUAL }, { title: "Short", text: "Receipts carry the cost." }],
        conversation_cap: 3
      }
    })
    expect(created.status).toBe(200)
    expect(created.body).toMatchObject({
      object: "agent",
      name: "Support",
      routing: { model: "svc/pro", models: ["svc/balanced"], route: "fallback", privacy: { class: "standard_route" } },
      embedding_model: "svc/embed",
      conversation_cap: 3,
      conversation_count: 0,
      document_count: 2
    })
    expect(created.body.id).toMatch(/^agt_/)

    const documents = (await gateway.request("GET", `/v1/agents/${created.body.id}/documents`, { key: account.key })).body
    expect(documents.data.map((document: any) => document.title)).toEqual(["Short", "Manual"])
    const manual = documents.data[1]
    expect(manual).toMatchObject({ object: "agent.document", agent_id: created.body.id, characters: MANUAL.length })
    expect(manual.id).toMatch(/^doc_/)
    expect(manual.chunks).toBeGreaterThan(1)

    // Every chunk is stored with its stemmed text vector and its embedding, titled by its heading path.
    const chunks = await gateway.query<{ id: string; text: string; dims: number; lexemes: number }>(
      `SELECT id, text, array_length(embedding, 1) AS dims, length(search) AS lexemes
       FROM agent_chunks WHERE document_id = $1 ORDER BY ordinal`,
      [manual.id]
    )
    expect(chunks).toHaveLength(manual.chunks)
    for (const chunk of chunks) {
      expect(chunk.id).toMatch(/^chk_/)
      expect(chunk.dims).toBe(chunks[0]!.dims)
      expect(chunk.lexemes).toBeGreaterThan(0)
    }
    expect(chunks[0]!.dims).toBeGreaterThan(100)
    expect(chunks[0]!.text.startsWith("Installing")).toBe(true)
    expect(chunks.some((chunk) => chunk.text.startsWith("Installing > On Linux\n\n"))).toBe(true)
    expect(chunks.at(-1)!.text).toBe("Billing\n\nEvery call is billed from the prepaid balance, and each call has a receipt.")

    // The balance dropped by exactly what the receipts say.
    const receipts = documents.data.map((document: any) => document.receipt_id as string)
    let billed = 0n
    for (const receipt of receipts) billed += await receiptTotal(account.key, receipt)
    expect(billed).toBeGreaterThan(0n)
    expect(before - nanos(await balanceOf(account.id))).toBe(billed)
  })

  it("lists an account's agents newest first with cursors, and never another account's", async () => {
    const [mine, other] = await Promise.all([gateway.account({ scopes: ["agents"] }), gateway.account({ scopes: ["agents"] })])
    const ids: Array<string> = []
    for (const name of ["a", "b", "c"]) {
      ids.push((await gateway.request("POST", "/v1/agents", { key: mine.key, body: { name, instructions: "" } })).body.id)
    }
    await gateway.request("POST", "/v1/agents", { key: other.key, body: { name: "theirs", instructions: "" } })
    const first = (await gateway.request("GET", "/v1/agents?limit=2", { key: mine.key })).body
    expect(first.data.map((agent: any) => agent.id)).toEqual([ids[2], ids[1]])
    expect(first.has_more).toBe(true)
    const rest = (await gateway.request("GET", `/v1/agents?limit=2&cursor=${first.next_cursor}`, { key: mine.key })).body
    expect(rest).toMatchObject({ data: [{ id: ids[0] }], has_more: false, next_cursor: null })

    // Another account's agent does not exist for the caller.
    for (const [method, path] of [["GET", ""], ["DELETE", ""], ["GET", "/documents"], ["POST", "/documents"]] as const) {
      const answer = await gateway.request(method, `/v1/agents/${ids[0]}${path}`, {
        key: other.key,
        ...(method === "POST" ? { body: { title: "t", text: "x" } } : {})
      })
      expect([method, path, answer.status, answer.body.error.code]).toEqual([method, path, 404, "not_found"])
    }
    expect((await gateway.request("GET", `/v1/agents/${ids[0]}`, { key: mine.key })).status).toBe(200)
  })

  it("deletes a document with its chunks, and an agent with its documents and chunks", async () => {
    const account = await gateway.account({ credit: "5", scopes: ["agents"] })
    const agent = (await gateway.request("POST", "/v1/agents", {
      key: account.key,
      body: { name: "del", instructions: "", knowledge: [{ title: "One", text: "First text." }] }
    })).body
    const added = await gateway.request("POST", `/v1/agents/${agent.id}/documents`, {
      key: account.key,
      body: { title: "Two", text: MANUAL }
    })
    expect(added.status).toBe(200)
    expect(added.body.receipt_id).toMatch(/^rcpt_/)
    const chunkCount = async () =>
      Number((await gateway.query<{ n: string }>("SELECT count(*) AS n FROM agent_chunks WHERE agent_id = $1", [agent.id]))[0]!.n)
    expect(await chunkCount()).toBe(1 + added.body.chunks)

    const removed = await gateway.request("DELETE", `/v1/agents/${agent.id}/documents/${added.body.id}`, { key: account.key })
    expect(removed).toMatchObject({ status: 200, body: { id: added.body.id } })
    expect(await chunkCount()).toBe(1)
    expect((await gateway.request("GET", `/v1/agents/${agent.id}`, { key: account.key })).body.document_count).toBe(1)
    expect((await gateway.request("DELETE", `/v1/agents/${agent.id}/documents/${added.body.id}`, { key: account.key })).status).toBe(404)

    expect((await gateway.request("DELETE", `/v1/agents/${agent.id}`, { key: account.key })).status).toBe(200)
    expect(await chunkCount()).toBe(0)
    expect((await gateway.query("SELECT id FROM agent_documents WHERE agent_id = $1", [agent.id]))).toEqual([])
    expect((await gateway.request("GET", `/v1/agents/${agent.id}`, { key: account.key })).status).toBe(404)
  })

  it.each([
    [{ routing: { model: "svc/nope" } }, "routing.model"],
    [{ routing: { model: "auto", models: ["svc/pro", "svc/embed"] } }, "routing.models[1]"],
    [{ routing: { model: "auto", privacy: { class: "top_secret" } } }, "routing.privacy.class"],
    [{ embedding_model: "svc/pro" }, "embedding_model"],
    [{ conversation_cap: 0 }, "conversation_cap"],
    [{ name: "" }, "name"]
  ])("refuses %j naming %s, and creates nothing", async (change, param) => {
    const account = await gateway.account({ scopes: ["agents"] })
    const answer = await gateway.request("POST", "/v1/agents", { key: account.key, body: { name: "x", instructions: "", ...change } })
    expect(answer.status).toBe(400)
    expect(answer.body.error).toMatchObject({ code: "invalid_request", param })
    expect((await gateway.request("GET", "/v1/agents", { key: account.key })).body.data).toEqual([])
  })

  it("does not embed the knowledge of an agent that demands a class above standard_route, unless it allows falling back", async () => {
    const account = await gateway.account({ credit: "5", scopes: ["agents"] })
    const body = (privacy: Record<string, unknown>) => ({
      name: "private",
      instructions: "",
      routing: { model: "auto", privacy: { class: "private_gateway_route", ...privacy } },
      knowledge: [{ title: "t", text: "Secret plans." }]
    })
    const refused = await gateway.request("POST", "/v1/agents", { key: account.key, body: body({}) })
    expect(refused.status).toBe(422)
    expect(refused.body.error).toMatchObject({ code: "privacy_class_unavailable_for_model", param: "routing.privacy.class" })
    expect((await gateway.request("GET", "/v1/agents", { key: account.key })).body.data).toEqual([])
    expect(await balanceOf(account.id)).toBe("5.000000000")
    const allowed = await gateway.request("POST", "/v1/agents", { key: account.key, body: body({ allowFallbackToLowerClass: true }) })
    expect(allowed).toMatchObject({ status: 200, body: { document_count: 1 } })
  })

  it("refuses a key without the agents scope, a document without text, and knowledge it cannot pay for", async () => {
    const chatOnly = await gateway.account({ credit: "5", scopes: ["chat"] })
    const refused = await gateway.request("GET", "/v1/agents", { key: chatOnly.key })
    expect(refused.status).toBe(401)
    expect(refused.body.error.message).toContain("\"agents\" scope")

    const account = await gateway.account({ credit: "1", scopes: ["agents"] })
    const agent = (await gateway.request("POST", "/v1/agents", { key: account.key, body: { name: "t", instructions: "" } })).body
    const blank = await gateway.request("POST", `/v1/agents/${agent.id}/documents`, { key: account.key, body: { title: "t", text: " \n\n " } })
    expect(blank.status).toBe(400)
    expect(blank.body.error).toMatchObject({ code: "invalid_request", param: "text" })

    // Inline knowledge is checked whole before the agent is stored: a blank document writes nothing at all.
    const eventsBefore = await gateway.query(`SELECT count(*)::int AS n FROM event_log WHERE account_id = '${account.id}'`)
    const blankInline = await gateway.request("POST", "/v1/agents", {
      key: account.key,
      body: { name: "blank", instructions: "", knowledge: [{ title: "a", text: MANUAL }, { title: "b", text: "\ufeff \n" }] }
    })
    expect(blankInline.status).toBe(400)
    expect(blankInline.body.error).toMatchObject({ code: "invalid_request", param: "knowledge[1].text" })
    expect(await gateway.query(`SELECT count(*)::int AS n FROM event_log WHERE account_id = '${account.id}'`)).toEqual(eventsBefore)
    expect((await gateway.request("GET", "/v1/agents", { key: account.key })).body.data.map((a: { id: string }) => a.id)).toEqual([agent.id])
    expect(await balanceOf(account.id)).toBe("1.000000000")

    const broke = await gateway.account({ credit: "0", scopes: ["agents"] })
    const poor = await gateway.request("POST", "/v1/agents", {
      key: broke.key,
      body: { name: "poor", instructions: "", knowledge: [{ title: "t", text: MANUAL }] }
    })
    expect(poor.status).toBe(402)
    // All or nothing: the agent whose knowledge could not be paid for is gone again.
    expect((await gateway.request("GET", "/v1/agents", { key: broke.key })).body.data).toEqual([])
    expect(await balanceOf(broke.id)).toBe("0.000000000")
  })
})
