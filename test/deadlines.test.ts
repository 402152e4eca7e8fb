/**
 * Deadlines and honest blame through the real server, against fake upstreams
 * on real sockets:
 * - an upstream that trickles a byte every 300 ms (which keeps undici's
 *   inter-byte timeouts quiet) is cut at its provider's `timeoutMs`, JSON and
 *   stream alike, and its hold is released — or, when content was already
 *   streamed, the stream ends with an error frame and what was delivered is
 *   billed; a stream that goes idle, and a call that outlives
 *   `routing.deadline.callMs`, end the same way;
 * - an upstream that refuses our credential or config (401, 403, 404) is the
 *   deployment's fault: the call fails over, the deployment's circuit opens,
 *   and a caller with no other route sees 502 `upstream_error`, never a 4xx.
 * The outcomes are read back from the database.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { Catalogue } from "../services/Catalogue.ts"
import { Health } from "../services/Health.ts"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { heldForCalls } from "./support/invariants.ts"

const MODELS = [
  "trickle-json", "trickle-stream", "partial", "idle", "deadline", "slow-first", "auth", "solo-401", "solo-403", "solo-404"
]
/** Models served by the scripted upstream (cheaper, so tried first) and by a well-behaved backup. */
const WITH_BACKUP = new Set(["auth", "slow-first"])

const model = (name: string) => ({
  id: `svc/t-${name}`,
  context: 128000,
  pricing: { input: "0.50", output: "1.50" },
  modalities: ["text"],
  capabilities: ["chat", "streaming"]
})

let upstream: FakeOpenAi
let backup: FakeOpenAi
let gateway: TestGateway
let account: { id: string; key: string }

const cheap = { input: "0.10", output: "0.30" }

/** `callMs` long enough that only the limit under test can end a call, unless it is the limit under test. */
const configWith = (callMs: number) => ({
  routing: {
    health: { failureThreshold: 1000, cooldownSeconds: 60 },
    retry: { maxAttempts: 2 },
    deadline: { callMs, streamIdleMs: 500 }
  },
  models: MODELS.map(model),
  providers: [
    {
      id: "scripted",
      plugin: "openai-compatible",
      baseUrl: upstream.baseUrl,
      timeoutMs: 1000,
      deployments: MODELS.filter((name) => !["idle", "deadline"].includes(name)).map((name) => ({
        model: `svc/t-${name}`,
        cost: cheap
      }))
    },
    {
      // Patient per attempt: the idle limit and the call deadline must cut these.
      id: "patient",
      plugin: "openai-compatible",
      baseUrl: upstream.baseUrl,
      timeoutMs: 20000,
      deployments: [{ model: "svc/t-idle", cost: cheap }, { model: "svc/t-deadline", cost: cheap }]
    },
    {
      id: "backup",
      plugin: "openai-compatible",
      baseUrl: backup.baseUrl,
      deployments: [...WITH_BACKUP].map((name) => ({ model: `svc/t-${name}`, cost: { input: "0.40", output: "1.20" } }))
    }
  ]
})

beforeAll(async () => {
  upstream = await startFakeOpenAi()
  backup = await startFakeOpenAi()
  gateway = await startGateway({ config: configWith(60_000) })
  account = await gateway.account({ credit: "10", scopes: ["chat", "monitoring"] })
})
afterAll(async () => {
  await gateway?.close()
  await upstream?.close()
  await backup?.close()
})
beforeEach(() => upstream.behave({}))

const chat = (name: string, options: { stream?: boolean; content?: string } = {}) =>
  gateway.request("POST", "/v1/chat/completions", {
    key: account.key,
    body: {
      model: `svc/t-${name}`,
      messages: [{ role: "user", content: options.content ?? "tell me something" }],
      ...(options.stream ? { stream: true } : {})
    }
  })

/** The SSE data frames of a streamed answer, parsed (`[DONE]` as the string). */
const framesOf = (text: string) =>
  text.split("\n\n").filter((frame) => frame.startsWith("data: ")).map((frame) => {
    const data = frame.slice(6)
    return data === "[DONE]" ? data : JSON.parse(data)
  })

/** The account's reservations, newest last, and what the account holds. */
const ledgerOf = async () => ({
  reservations: await gateway.query<{ id: string; status: string }>(
    "SELECT id, status FROM reservations WHERE account_id = $1 ORDER BY created_at",
    [account.id]
  ),
  account: (await gateway.request("GET", `/v1/admin/accounts/${account.id}`)).body,
  /** Held for calls: reserved less this process's credit lease for the account's next calls. */
  held: await heldForCalls(gateway.query, account.id)
})

const releasedReason = async (reservation: string) =>
  (await gateway.query<{ reason: string }>(
    "SELECT data->>'reason' AS reason FROM events WHERE type = 'payment.released' AND receipt_id = $1",
    [reservation]
  )).map((row) => row.reason)

const deploymentOf = (name: string, provider: string) =>
  gateway.run(Effect.map(Catalogue, (catalogue) =>
    catalogue.deployments(`svc/t-${name}`).find((deployment) => deployment.provider.id === provider)!.id))

describe("deadlines", () => {
  it("cuts a JSON answer that trickles forever at timeoutMs: 504, and the hold is released", async () => {
    upstream.behave({ trickleEveryMs: 300 })
    const response = await chat("trickle-json")
    expect(response.status).toBe(504)
    expect(response.body.error.code).toBe("upstream_timeout")
    const { account: after, held, reservations } = await ledgerOf()
    expect(held).toBe("0.000000000")
    expect(after.balance_usd).toBe("10.000000000")
    const last = reservations.at(-1)!
    expect(last.status).toBe("released")
    expect(await releasedReason(last.id)).toEqual(["call_failed"])
  }, 15_000)

  it("cuts a stream that sent nothing at timeoutMs: 504 before any byte, and the hold is released", async () => {
    upstream.behave({ trickleEveryMs: 300 })
    const response = await chat("trickle-stream", { stream: true })
    expect(response.status).toBe(504)
    expect(response.body.error.code).toBe("upstream_timeout")
    // A stream's hold belongs to the request's scope, which closes just after the response is sent.
    let ledger = await ledgerOf()
    for (let i = 0; i < 50 && ledger.reservations.at(-1)!.status !== "released"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      ledger = await ledgerOf()
    }
    expect(ledger.reservations.at(-1)!.status).toBe("released")
    expect(ledger.held).toBe("0.000000000")
  }, 15_000)

  const billsWhatWasDelivered = async (name: string, content = "one two three four five six seven eight") => {
    const before = (await ledgerOf()).account.balance_usd
    const response = await chat(name, { stream: true, content })
    expect(response.status).toBe(200)
    const frames = framesOf(response.text)
    const last = frames.at(-1)
    expect(last).not.toBe("[DONE]")
    expect(last.error.code).toBe("upstream_timeout")
    const streamed = frames.slice(0, -1).map((frame: any) => frame.choices[0]?.delta.content ?? "").join("")
    expect(streamed.length).toBeGreaterThan(0)
    const receiptId = response.headers.get("x-svc-receipt-id")!
    const { account: after, held, reservations } = await ledgerOf()
    expect(held).toBe("0.000000000")
    expect(reservations.find((row) => row.id === receiptId)!.status).toBe("settled")
    const [receipt] = await gateway.query<{ output_tokens: number; total_usd: string }>(
      "SELECT output_tokens, total_usd::text FROM receipts WHERE id = $1",
      [receiptId]
    )
    expect(receipt!.output_tokens).toBeGreaterThan(0)
    // Σ receipts = balance drop, for this call.
    expect(Number(before) - Number(after.balance_usd)).toBeCloseTo(Number(receipt!.total_usd), 9)
    return frames.length - 1
  }

  it("ends a stream that goes quiet after its first content at timeoutMs with an error frame, billed for what was sent", async () => {
    upstream.behave({ hangAfterChunks: 3, trickleEveryMs: 300 })
    expect(await billsWhatWasDelivered("partial")).toBe(3)
  }, 15_000)

  it("ends a stream that delivers nothing for streamIdleMs, however patient its provider", async () => {
    // Bytes every 100 ms, but never a chunk: not activity. The idle limit cuts it before the call deadline.
    upstream.behave({ hangAfterChunks: 2, trickleEveryMs: 100 })
    expect(await billsWhatWasDelivered("idle")).toBe(2)
  }, 15_000)

  describe("with a call deadline of 2.5 s", () => {
    const patient = { gateway: undefined as unknown as TestGateway, account }
    beforeAll(async () => {
      Object.assign(patient, { gateway, account })
      gateway = await startGateway({ config: configWith(2500) })
      account = await gateway.account({ credit: "10" })
    })
    afterAll(async () => {
      await gateway?.close()
      ;({ gateway, account } = patient)
    })

    it("ends a stream that keeps delivering past the call's deadline", async () => {
      // A frame every 400 ms: never idle for 500 ms, never over the patient timeoutMs: only the call deadline cuts it.
      upstream.behave({ chunkDelayMs: 400 })
      const delivered = await billsWhatWasDelivered("deadline", "one two three four five six seven eight ".repeat(8))
      expect(delivered).toBeGreaterThan(2)
      expect(delivered).toBeLessThan(30)
    }, 15_000)
  })

  it("fails over from an attempt that ran out of time to the next route", async () => {
    upstream.behave({ trickleEveryMs: 300 })
    const before = backup.requests.length
    const response = await chat("slow-first")
    expect(response.status).toBe(200)
    expect(backup.requests.length).toBe(before + 1)
  }, 15_000)
})

describe("honest blame", () => {
  it("fails over from an upstream that refuses our credential, and opens its circuit at once", async () => {
    upstream.behave({ status: 401, errorBody: { error: { type: "invalid_api_key", message: "bad key" } } })
    const tried = upstream.requests.length
    const response = await chat("auth")
    expect(response.status).toBe(200)
    expect(upstream.requests.length).toBe(tried + 1)
    const refusing = await deploymentOf("auth", "scripted")
    const health = await gateway.run(Effect.map(Health, (h) => h.view(refusing)))
    expect(health.state).toBe("open")
    expect(health.failures).toBe(1)
    // The next call does not even try it.
    expect((await chat("auth")).status).toBe(200)
    expect(upstream.requests.length).toBe(tried + 1)
  }, 15_000)

  for (const status of [401, 403, 404]) {
    it(`answers 502 upstream_error, not a 4xx, when the only route answers ${status}`, async () => {
      upstream.behave({ status })
      const response = await chat(`solo-${status}`)
      expect(response.status).toBe(502)
      expect(response.body.error.code).toBe("upstream_error")
      expect((await ledgerOf()).held).toBe("0.000000000")
    }, 15_000)
  }

  it("shows the refusing deployments as unavailable in the providers' health", async () => {
    const response = await gateway.request("GET", "/v1/providers/health", { key: account.key })
    expect(response.status).toBe(200)
    for (const status of [401, 403, 404]) {
      const solo = (response.body.data as Array<any>).find((entry) => entry.model === `svc/t-solo-${status}`)
      expect(solo.availability).toBe(0)
    }
  })
})
