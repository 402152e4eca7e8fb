/**
 * Leases through the real server, with a lease of 1 s and the sweeper
 * running every second: a streamed call that runs several leases long keeps
 * its hold (its heartbeat renews it) and is settled once, with no
 * `lease_expired` release; a hold nobody renews — its process died — is
 * released by the sweeper. Read back from the database.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Ledger } from "../services/Ledger.ts"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let upstream: FakeOpenAi
let gateway: TestGateway
let account: { id: string; key: string }

beforeAll(async () => {
  upstream = await startFakeOpenAi()
  gateway = await startGateway({
    config: {
      billing: { reservationLeaseSeconds: 1, sweepIntervalSeconds: 1 },
      models: [{
        id: "svc/slow",
        context: 128000,
        pricing: { input: "0.50", output: "1.50" },
        modalities: ["text"],
        capabilities: ["chat", "streaming"]
      }],
      providers: [{
        id: "slow-upstream",
        plugin: "openai-compatible",
        baseUrl: upstream.baseUrl,
        timeoutMs: 30_000,
        deployments: [{ model: "svc/slow", cost: { input: "0.10", output: "0.30" } }]
      }]
    }
  })
  account = await gateway.account({ credit: "10" })
})
afterAll(async () => {
  await gateway?.close()
  await upstream?.close()
})

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const releases = (reservation: string) =>
  gateway.query<{ reason: string }>(
    "SELECT data->>'reason' AS reason FROM events WHERE type = 'payment.released' AND receipt_id = $1",
    [reservation]
  )

describe("reservation leases", () => {
  it("keeps the hold of a call that runs longer than its lease: renewed, never swept, settled once", async () => {
    // Ten frames 400 ms apart: about four leases long.
    upstream.behave({ chunkDelayMs: 400 })
    const response = await gateway.request("POST", "/v1/chat/completions", {
      key: account.key,
      body: { model: "svc/slow", messages: [{ role: "user", content: "a b c d e f g h" }], stream: true }
    })
    expect(response.status).toBe(200)
    expect(response.text.trimEnd().endsWith("data: [DONE]")).toBe(true)
    const receiptId = response.headers.get("x-svc-receipt-id")!
    const [reservation] = await gateway.query<{ status: string; lived: number }>(
      "SELECT status, extract(epoch FROM closed_at - created_at)::float AS lived FROM reservations WHERE id = $1",
      [receiptId]
    )
    expect(reservation!.status).toBe("settled")
    // It did outlive its lease (otherwise this test shows nothing).
    expect(reservation!.lived).toBeGreaterThan(2)
    expect(await releases(receiptId)).toEqual([])
    const after = (await gateway.request("GET", `/v1/admin/accounts/${account.id}`)).body
    expect(after.reserved_usd).toBe("0.000000000")
  }, 30_000)

  it("sweeps a hold whose process died (nobody renews it)", async () => {
    // Reserved straight on the ledger, as a process that then died would have: no heartbeat.
    const orphan = await gateway.run(Effect.flatMap(Ledger, (ledger) =>
      ledger.reserve({ accountId: account.id, requestId: "req_orphan", amount: 1_000_000n })))
    let reasons: ReadonlyArray<{ reason: string }> = []
    for (let i = 0; i < 50 && reasons.length === 0; i++) {
      await sleep(200)
      reasons = await releases(orphan.id)
    }
    expect(reasons).toEqual([{ reason: "lease_expired" }])
    const after = (await gateway.request("GET", `/v1/admin/accounts/${account.id}`)).body
    expect(after.reserved_usd).toBe("0.000000000")
  }, 30_000)
})
