/**
 * Privacy classes through the real server: which class a request asks for
 * (class, bestAvailable, legacy mode), which deployments may serve it, 422 and
 * downgrades, the privacy block on JSON and streamed responses, receipts and
 * events, failover that never serves a weaker class, and no prompt text in
 * the database. Money invariants after every test.
 */
import { randomBytes } from "node:crypto"
import OpenAI from "openai"
import { Effect, Exit, Scope } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import {
  acquireFakeAttestationRuntime,
  type FakeAttestationRuntime,
  type RuntimeMode
} from "./support/fakeAttestationRuntime.ts"
import { columnsHolding, fakeProvider, NO_RETENTION } from "./support/canary.ts"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { moneyViolations } from "./support/invariants.ts"

let upstream: FakeOpenAi
let gateway: TestGateway
const runtimesScope = Effect.runSync(Scope.make())
/** Confidential runtimes: one that attests, one that measures something not allowed, one that is down. */
let attesting: FakeAttestationRuntime
let unknownCode: FakeAttestationRuntime
let down: FakeAttestationRuntime
/** One more runtime per way an attestation can be wrong, each behind a model of its own, with the reason it must give. */
const brokenRuntimes: ReadonlyArray<readonly [RuntimeMode, string]> = [
  ["expired", "attestation_expired"],
  ["too_old", "attestation_expired"],
  ["wrong_nonce", "nonce_mismatch"],
  ["bad_signature", "signature_invalid"],
  ["hangup", "verifier_unreachable"]
]
let broken: Array<FakeAttestationRuntime>

const model = (id: string) => ({
  id,
  context: 32000,
  pricing: { input: "1.00", output: "2.00" },
  modalities: ["text"],
  capabilities: ["chat", "streaming"]
})

beforeAll(async () => {
  upstream = await startFakeOpenAi()
  ;[attesting, unknownCode, down, ...broken] = await Effect.runPromise(
    Scope.extend(Effect.all(Array.from({ length: 3 + brokenRuntimes.length }, () => acquireFakeAttestationRuntime)), runtimesScope)
  )
  broken.forEach((runtime, i) => (runtime.mode = brokenRuntimes[i]![0]))
  unknownCode.mode = "wrong_measurement"
  down.mode = "down"
  down.retryAfter = "7"
  const provider = (id: string, privacy: unknown, deployments: Array<unknown>) =>
    fakeProvider(upstream.baseUrl, id, privacy, deployments, { timeoutMs: 2000 })
  gateway = await startGateway({
    config: {
      routing: { health: { failureThreshold: 1000 } },
      models: [
        "svc/open",
        "svc/guarded",
        "svc/vault",
        "svc/vault-unknown",
        "svc/vault-down",
        ...brokenRuntimes.map(([mode]) => `svc/vault-${mode}`)
      ].map(model),
      providers: [
        // No stated policy: it counts as storing, logging and training — standard only. The cheapest.
        provider("privacy-anyone", undefined, [{ model: "svc/open", upstreamModel: "open-on-anyone", cost: { input: "0.10", output: "0.20" } }]),
        provider("privacy-careful", NO_RETENTION, [
          { model: "svc/open", upstreamModel: "open-on-careful", cost: { input: "0.50", output: "1.00" } },
          { model: "svc/guarded", upstreamModel: "guarded-on-careful", cost: { input: "0.30", output: "0.60" } }
        ]),
        provider("privacy-own-racks", { ...NO_RETENTION, operatorControlled: true }, [
          { model: "svc/guarded", upstreamModel: "guarded-on-own-racks", cost: { input: "0.50", output: "1.00" } }
        ]),
        provider("privacy-enclave", { ...NO_RETENTION, attestation: attesting.config() }, [
          { model: "svc/vault", upstreamModel: "vault-in-enclave" }
        ]),
        provider("privacy-enclave-unknown", { ...NO_RETENTION, attestation: unknownCode.config() }, [
          { model: "svc/vault-unknown", upstreamModel: "vault-unknown-code" }
        ]),
        provider("privacy-enclave-down", { ...NO_RETENTION, attestation: down.config() }, [
          { model: "svc/vault-down", upstreamModel: "vault-runtime-down" }
        ]),
        ...brokenRuntimes.map(([mode], i) =>
          provider(`privacy-enclave-${mode}`, { ...NO_RETENTION, attestation: broken[i]!.config() }, [
            { model: `svc/vault-${mode}`, upstreamModel: `vault-${mode}` }
          ])),
        // Agents embed their knowledge with svc/embed.
        { id: "sandbox", plugin: "sandbox", deployments: [{ model: "svc/embed" }] }
      ]
    }
  })
})
afterEach(async () => {
  upstream.behave({})
  expect(await moneyViolations(gateway.query)).toEqual([])
})
afterAll(async () => {
  await gateway?.close()
  await upstream?.close()
  await Effect.runPromise(Scope.close(runtimesScope, Exit.void))
})

const account = () => gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })

const chat = (key: string, body: Record<string, unknown>) => gateway.request("POST", "/v1/chat/completions", { key, body })

const ask = (modelId: string, privacy?: Record<string, unknown>, content = "keep this private") => ({
  model: modelId,
  messages: [{ role: "user", content }],
  ...(privacy === undefined ? {} : { privacy })
})

/** The upstream model the last upstream call named: which deployment served. */
const lastUpstreamModel = () => upstream.requests.at(-1)?.body.model

const privacyEvents = (accountId: string) =>
  gateway.query<{ type: string; data: any }>(
    "SELECT type, data FROM event_log WHERE account_id = $1 AND type LIKE 'privacy.%' ORDER BY created_at, type",
    [accountId]
  )

describe("privacy classes", () => {
  it("serves the standard class by default and says so truthfully", async () => {
    const { key } = await account()
    const response = await chat(key, ask("svc/open"))
    expect(response.status).toBe(200)
    expect(lastUpstreamModel()).toBe("open-on-anyone")
    expect(response.body.privacy).toEqual({
      class: "standard_route",
      label: "Standard route",
      svc_stores_prompts: false,
      svc_logs_prompts: false,
      // The provider states no policy: it may train.
      training_on_prompts: true,
      upstream_disclosed: false,
      guarantee: expect.any(String)
    })
  })

  it("serves a protected request only on a deployment that earns it, and receipts the class", async () => {
    const { id, key } = await account()
    const response = await chat(key, ask("svc/open", { class: "protected_provider_route" }))
    expect(response.status).toBe(200)
    expect(lastUpstreamModel()).toBe("open-on-careful")
    expect(response.body.privacy).toMatchObject({
      class: "protected_provider_route",
      svc_stores_prompts: false,
      svc_logs_prompts: false,
      training_on_prompts: false,
      upstream_disclosed: false
    })
    const receipt = await gateway.request("GET", `/v1/receipts/${response.headers.get("x-svc-receipt-id")}`, { key })
    expect(receipt.body.privacy_class).toBe("protected_provider_route")
    expect(await privacyEvents(id)).toEqual([{ type: "privacy.class_served", data: { class: "protected_provider_route" } }])
  })

  it("refuses a class the model cannot earn with 422, asking nothing upstream", async () => {
    const { id, key } = await account()
    const before = upstream.requests.length
    const response = await chat(key, ask("svc/open", { class: "private_gateway_route" }))
    expect(response.status).toBe(422)
    expect(response.body.error).toMatchObject({ code: "privacy_class_unavailable_for_model", param: "privacy.class" })
    expect(upstream.requests.length).toBe(before)
    const events = await privacyEvents(id)
    expect(events.map((event) => event.type)).toEqual(["privacy.rejected"])
    expect(events[0]!.data).toMatchObject({ requested: "private_gateway_route", reason: "not_earnable" })
  })

  it("downgrades to the strongest class the model earns when the caller allows it", async () => {
    const { id, key } = await account()
    const response = await chat(key, ask("svc/open", { class: "private_gateway_route", allowFallbackToLowerClass: true }))
    expect(response.status).toBe(200)
    expect(response.body.privacy.class).toBe("protected_provider_route")
    expect(lastUpstreamModel()).toBe("open-on-careful")
    const events = await privacyEvents(id)
    expect(events.map((event) => event.type).sort()).toEqual(["privacy.class_served", "privacy.downgraded"])
    expect(events.find((event) => event.type === "privacy.downgraded")!.data).toEqual({
      requested: "private_gateway_route",
      served: "protected_provider_route",
      model: "svc/open"
    })
  })

  it("bestAvailable picks the strongest class the model earns, over an explicit class", async () => {
    const { key } = await account()
    const response = await chat(key, ask("svc/guarded", { bestAvailable: true, class: "standard_route" }))
    expect(response.body.privacy.class).toBe("private_gateway_route")
    expect(lastUpstreamModel()).toBe("guarded-on-own-racks")
  })

  it("maps the legacy modes, and refuses unknown classes and modes and a malformed sealed prompt with 400", async () => {
    const { key } = await account()
    expect((await chat(key, ask("svc/guarded", { mode: "mesh" }))).body.privacy.class).toBe("private_gateway_route")
    expect((await chat(key, ask("svc/guarded", { mode: "standard" }))).body.privacy.class).toBe("standard_route")
    for (const [privacy, param] of [
      [{ class: "top_secret" }, "privacy.class"],
      [{ mode: "stealth" }, "privacy.mode"],
      [{ mode: "mesh", class: "standard_route" }, "privacy.mode"],
      [{ encryptedPrompt: "eyJhbGciOi" }, "privacy.encryptedPrompt"]
    ] as const) {
      const response = await chat(key, ask("svc/guarded", privacy))
      expect(response.status).toBe(400)
      expect(response.body.error).toMatchObject({ code: "invalid_request", param })
    }
    expect((await chat(key, { ...ask("svc/guarded"), privacy: "private" })).status).toBe(400)
  })

  it("serves the confidential class only with a fresh attestation verdict, and records it", async () => {
    const { id, key } = await account()
    const response = await chat(key, ask("svc/vault", { class: "confidential_runtime_route" }))
    expect(response.status).toBe(200)
    expect(lastUpstreamModel()).toBe("vault-in-enclave")
    expect(response.body.privacy).toMatchObject({ class: "confidential_runtime_route", training_on_prompts: false })
    expect(attesting.nonces.length).toBeGreaterThanOrEqual(1)
    const [served] = (await privacyEvents(id)).filter((event) => event.type === "privacy.class_served")
    expect(served!.data.attestation_verdicts).toEqual([expect.stringMatching(/^att_/)])
    const receipt = await gateway.request("GET", `/v1/receipts/${response.headers.get("x-svc-receipt-id")}`, { key })
    expect(receipt.body).toMatchObject({ privacy_class: "confidential_runtime_route" })
    expect(receipt.body.attestation_verdict_ids).toEqual(served!.data.attestation_verdicts)
  })

  it("fails closed with the reason when the runtime's attestation is not valid, asking nothing upstream", async () => {
    const { id, key } = await account()
    const before = upstream.requests.length
    const unknown = await chat(key, ask("svc/vault-unknown", { class: "confidential_runtime_route" }))
    expect(unknown.status).toBe(503)
    expect(unknown.body.error.code).toBe("privacy_class_runtime_unavailable")
    expect(unknown.body.error.message).toContain("measurement_not_allowed")
    expect(Number(unknown.headers.get("retry-after"))).toBeGreaterThan(0)
    // Never a silent downgrade, even when lower classes are allowed.
    const allowed = await chat(key, ask("svc/vault-down", { class: "confidential_runtime_route", allowFallbackToLowerClass: true }))
    expect(allowed.status).toBe(503)
    expect(allowed.body.error.message).toContain("verifier_unreachable")
    expect(allowed.headers.get("retry-after")).toBe("7")
    expect(upstream.requests.length).toBe(before)
    const rejected = (await privacyEvents(id)).filter((event) => event.type === "privacy.rejected")
    expect(rejected.map((event) => event.data.reason).sort()).toEqual(["measurement_not_allowed", "verifier_unreachable"])
  })

  it.each(brokenRuntimes)("a runtime whose attestation is %s gets 503 with the reason %s, asking nothing upstream", async (mode, reason) => {
    const { id, key } = await account()
    const before = upstream.requests.length
    const marker = `never-sent-${randomBytes(6).toString("hex")}`
    const response = await chat(key, ask(`svc/vault-${mode}`, { class: "confidential_runtime_route" }, marker))
    expect(response.status).toBe(503)
    expect(response.body.error).toMatchObject({ code: "privacy_class_runtime_unavailable", param: "privacy.class" })
    expect(response.body.error.message).toContain(`reason: ${reason}`)
    expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0)
    expect(upstream.requests.length).toBe(before)
    expect(JSON.stringify(upstream.requests)).not.toContain(marker)
    expect((await privacyEvents(id)).map((event) => [event.type, event.data.reason])).toEqual([["privacy.rejected", reason]])
  })

  it("never fails over to a weaker class: the protected route failing is a 502, not a standard answer", async () => {
    const { id, key } = await account()
    upstream.behave({ status: 500 })
    const response = await chat(key, ask("svc/open", { class: "protected_provider_route" }))
    expect(response.status).toBe(502)
    const models = new Set(upstream.requests.slice(-4).map((request) => request.body.model))
    expect(models).toEqual(new Set(["open-on-careful"]))
    expect(await gateway.query("SELECT id FROM receipts WHERE account_id = $1", [id])).toEqual([])
  })

  it("puts the privacy block on the final chunk of a stream", async () => {
    const { key } = await account()
    const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    for (const include_usage of [false, true]) {
      const stream = await client.chat.completions.create({
        ...ask("svc/open", { class: "protected_provider_route" }),
        stream: true,
        stream_options: { include_usage }
      } as any) as any
      const chunks: Array<any> = []
      for await (const chunk of stream) chunks.push(chunk)
      expect(chunks.at(-1).privacy).toMatchObject({ class: "protected_provider_route", training_on_prompts: false })
      expect(chunks.slice(0, -1).every((chunk) => chunk.privacy === undefined)).toBe(true)
      expect(chunks.at(-1).usage != null).toBe(include_usage)
    }
  })

  it("keeps no prompt or completion text in any table (canary)", async () => {
    const { key } = await account()
    const marker = `canary-${randomBytes(8).toString("hex")}`
    const targets: Record<string, string> = { private_gateway_route: "svc/guarded", confidential_runtime_route: "svc/vault" }
    for (
      const privacy of [
        undefined,
        { class: "protected_provider_route" },
        { class: "private_gateway_route" },
        { class: "confidential_runtime_route" }
      ]
    ) {
      const target = targets[privacy?.class ?? ""] ?? "svc/open"
      const response = await chat(key, ask(target, privacy, `please repeat ${marker}`))
      expect(response.status).toBe(200)
      // The sandbox-like fake echoes the prompt: the marker is in the completion text too.
      expect(JSON.stringify(response.body)).toContain(marker)
    }
    // A kept idempotent response is sealed, and still replays byte for byte.
    const sealed = ask("svc/open", { class: "protected_provider_route" }, `keep ${marker} once`)
    const headers = { "idempotency-key": `canary-${randomBytes(4).toString("hex")}` }
    const first = await gateway.request("POST", "/v1/chat/completions", { key, body: sealed, headers })
    const replay = await gateway.request("POST", "/v1/chat/completions", { key, body: sealed, headers })
    expect(first.text).toContain(marker)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.text).toBe(first.text)
    // An agent whose preset asks for the protected class: its runs, JSON and streamed, continued.
    const owner = await gateway.account({ credit: "5", scopes: ["agents", "chat", "monitoring"] })
    const agent = await gateway.request("POST", "/v1/agents", {
      key: owner.key,
      body: { name: "discreet", instructions: "Be brief.", routing: { model: "svc/open", privacy: { class: "protected_provider_route" } } }
    })
    expect(agent.status, JSON.stringify(agent.body)).toBe(200)
    const run = await gateway.request("POST", "/v1/agents/runs", {
      key: owner.key,
      body: { agent: agent.body.id, input: `please repeat ${marker}` }
    })
    expect(run.status).toBe(200)
    expect(run.body.output).toContain(marker)
    expect(run.body.privacy).toMatchObject({ class: "protected_provider_route", svc_stores_prompts: false, svc_logs_prompts: false })
    const streamed = await fetch(`${gateway.url}/v1/agents/runs?stream=true`, {
      method: "POST",
      headers: { authorization: `Bearer ${owner.key}`, "content-type": "application/json" },
      body: JSON.stringify({ agent: agent.body.id, input: `and again ${marker}`, conversation_id: run.body.conversation_id })
    })
    const events = await streamed.text()
    expect(events).toContain("event: run.completed")
    expect(events).toContain(marker)
    // Not embedded: the question went to no embeddings upstream, and the receipt has no such line.
    const receipt = await gateway.request("GET", `/v1/receipts/${run.body.receipt_id}`, { key: owner.key })
    expect(receipt.body.line_items.map((item: any) => item.step)).toEqual(["generation"])
    expect(receipt.body.privacy_class).toBe("protected_provider_route")

    const { found, searched } = await columnsHolding(gateway.query, marker)
    expect(searched.length).toBeGreaterThan(10)
    expect(found).toEqual([])
  })
})
