/**
 * Prompt storage for the standard class, turned on by the operator
 * (`promptStorage.standardRoute`): a standard call's text is kept and
 * readable by its own account, and its privacy block says so; a call served
 * at any stronger class keeps nothing anywhere, and its block says that.
 * (With storage off, the default, test/privacy.test.ts's canary finds the
 * text of no class in any table.)
 */
import { randomBytes } from "node:crypto"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { columnsHolding, fakeProvider, NO_RETENTION } from "./support/canary.ts"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { moneyViolations } from "./support/invariants.ts"

const RETENTION_DAYS = 7
let upstream: FakeOpenAi
let gateway: TestGateway

beforeAll(async () => {
  upstream = await startFakeOpenAi()
  const provider = (id: string, privacy: unknown, upstreamModel: string) =>
    fakeProvider(upstream.baseUrl, id, privacy, [{ model: "svc/kept", upstreamModel }])
  gateway = await startGateway({
    config: {
      promptStorage: { standardRoute: true, retentionDays: RETENTION_DAYS },
      models: [{
        id: "svc/kept",
        context: 32000,
        pricing: { input: "1.00", output: "2.00" },
        modalities: ["text"],
        capabilities: ["chat", "streaming"]
      }],
      providers: [
        provider("kept-anyone", undefined, "kept-standard"),
        provider("kept-careful", NO_RETENTION, "kept-protected")
      ]
    }
  })
})
afterEach(async () => {
  expect(await moneyViolations(gateway.query)).toEqual([])
})
afterAll(async () => {
  await gateway?.close()
  await upstream?.close()
})

const chat = (key: string, content: string, privacy?: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  gateway.request("POST", "/v1/chat/completions", {
    key,
    body: { model: "svc/kept", messages: [{ role: "user", content }], ...(privacy ? { privacy } : {}), ...extra }
  })

const transcriptOf = (key: string, receiptId: string | null) =>
  gateway.request("GET", `/v1/receipts/${receiptId}/transcript`, { key })

describe("prompt storage for the standard class", () => {
  it("keeps a standard call's text for its account, and the block says so", async () => {
    const { key } = await gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })
    const marker = `kept-${randomBytes(6).toString("hex")}`
    const response = await chat(key, `repeat ${marker}`)
    expect(response.status).toBe(200)
    expect(response.body.privacy).toMatchObject({ class: "standard_route", svc_stores_prompts: true, svc_logs_prompts: false })
    expect(response.body.privacy.guarantee).toContain(`${RETENTION_DAYS} days`)

    const transcript = await transcriptOf(key, response.headers.get("x-svc-receipt-id"))
    expect(transcript.status).toBe(200)
    expect(transcript.body).toMatchObject({
      object: "transcript",
      receipt_id: response.headers.get("x-svc-receipt-id"),
      privacy_class: "standard_route",
      messages: [{ role: "user", content: `repeat ${marker}` }],
      completion: { content: response.body.choices[0].message.content }
    })
    const kept = Date.parse(transcript.body.expires_at) - Date.parse(transcript.body.created_at)
    expect(kept).toBe(RETENTION_DAYS * 24 * 3600 * 1000)
  })

  it("keeps what a stream delivered", async () => {
    const { key } = await gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })
    const response = await chat(key, "stream this back", undefined, { stream: true })
    expect(response.status).toBe(200)
    let text = ""
    let last: any
    for (const line of response.text.split("\n")) {
      if (!line.startsWith("data: {")) continue
      last = JSON.parse(line.slice(6))
      text += last.choices[0]?.delta?.content ?? ""
    }
    expect(text).toContain("stream this back")
    expect(last.privacy).toMatchObject({ class: "standard_route", svc_stores_prompts: true })
    const transcript = await transcriptOf(key, response.headers.get("x-svc-receipt-id"))
    expect(transcript.status).toBe(200)
    expect(transcript.body.completion).toEqual({ content: text })
  })

  it("keeps nothing of a call served above standard, and says so", async () => {
    const { key } = await gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })
    const marker = `unkept-${randomBytes(6).toString("hex")}`
    const response = await chat(key, `repeat ${marker}`, { class: "protected_provider_route" })
    expect(response.status).toBe(200)
    expect(JSON.stringify(response.body.choices)).toContain(marker)
    expect(response.body.privacy).toMatchObject({ class: "protected_provider_route", svc_stores_prompts: false })
    expect(response.body.privacy.guarantee).not.toContain("stores prompt")
    const transcript = await transcriptOf(key, response.headers.get("x-svc-receipt-id"))
    expect(transcript.status).toBe(404)
    expect(transcript.body.error).toMatchObject({ code: "not_found", param: "id" })
    const { found, searched } = await columnsHolding(gateway.query, marker)
    expect(searched).toContain("transcripts")
    expect(found).toEqual([])
  })

  it("shows a transcript to its own account only, and not after it expires", async () => {
    const owner = await gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })
    const other = await gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })
    const response = await chat(owner.key, "mine alone")
    const receiptId = response.headers.get("x-svc-receipt-id")
    expect((await transcriptOf(owner.key, receiptId)).status).toBe(200)
    expect((await transcriptOf(other.key, receiptId)).status).toBe(404)
    expect((await transcriptOf(owner.key, "rcpt_unknown")).status).toBe(404)
    await gateway.query("UPDATE transcripts SET expires_at = now() - interval '1 second' WHERE receipt_id = $1", [receiptId])
    expect((await transcriptOf(owner.key, receiptId)).status).toBe(404)
  })
})
