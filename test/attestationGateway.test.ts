/**
 * The `jws-json` attestation kind through the real gateway: a confidential
 * call is served under a fresh verdict from a runtime answering with a
 * flattened JSON JWS; a tampered signature, a wrong nonce, a measurement not
 * allowed and an expired document are each a 503
 * `privacy_class_runtime_unavailable`, with nothing sent upstream.
 */
import { randomBytes } from "node:crypto"
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fakeProvider, NO_RETENTION } from "./support/canary.ts"
import { acquireFakeAttestationRuntime, type FakeAttestationRuntime, type RuntimeMode } from "./support/fakeAttestationRuntime.ts"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { moneyViolations } from "./support/invariants.ts"

let upstream: FakeOpenAi
let gateway: TestGateway
const runtimesScope = Effect.runSync(Scope.make())
/** One jws-json runtime per mode, each behind a model `svc/jws-<mode>` of its own, with the reason a refusal must give. */
const modes: ReadonlyArray<readonly [RuntimeMode, string | undefined]> = [
  ["valid", undefined],
  ["tampered", "signature_invalid"],
  ["wrong_nonce", "nonce_mismatch"],
  ["wrong_measurement", "measurement_not_allowed"],
  ["expired", "attestation_expired"]
]
let runtimes: Array<FakeAttestationRuntime>

beforeAll(async () => {
  upstream = await startFakeOpenAi()
  runtimes = await Effect.runPromise(
    Scope.extend(Effect.all(modes.map(() => acquireFakeAttestationRuntime)), runtimesScope)
  )
  runtimes.forEach((runtime, i) => {
    runtime.format = "jws-json"
    runtime.mode = modes[i]![0]
  })
  gateway = await startGateway({
    config: {
      models: modes.map(([mode]) => ({
        id: `svc/jws-${mode}`,
        context: 32000,
        pricing: { input: "1.00", output: "2.00" },
        modalities: ["text"],
        capabilities: ["chat"]
      })),
      providers: modes.map(([mode], i) =>
        fakeProvider(upstream.baseUrl, `jws-enclave-${mode}`, { ...NO_RETENTION, attestation: runtimes[i]!.config() }, [
          { model: `svc/jws-${mode}`, upstreamModel: `jws-${mode}` }
        ], { timeoutMs: 2000 }))
    }
  })
})
afterAll(async () => {
  await gateway?.close()
  await upstream?.close()
  await Effect.runPromise(Scope.close(runtimesScope, Exit.void))
})

const confidential = async (mode: RuntimeMode, content: string) => {
  const { key } = await gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })
  const response = await gateway.request("POST", "/v1/chat/completions", {
    key,
    body: {
      model: `svc/jws-${mode}`,
      messages: [{ role: "user", content }],
      privacy: { class: "confidential_runtime_route" }
    }
  })
  return { ...response, key }
}

describe("jws-json attestation through the gateway", () => {
  it("serves a confidential call under a fresh jws-json verdict", async () => {
    const response = await confidential("valid", "hello enclave")
    expect(response.status).toBe(200)
    expect(upstream.requests.at(-1)?.body.model).toBe("jws-valid")
    expect(response.body.privacy).toMatchObject({ class: "confidential_runtime_route" })
    expect(runtimes[0]!.nonces.length).toBeGreaterThanOrEqual(1)
    const receipt = await gateway.request("GET", `/v1/receipts/${response.headers.get("x-svc-receipt-id")}`, { key: response.key })
    expect(receipt.body.attestation_verdict_ids).toEqual([expect.stringMatching(/^att_/)])
    expect(await moneyViolations(gateway.query)).toEqual([])
  })

  it.each(modes.filter(([, reason]) => reason !== undefined))(
    "a %s document is 503 with the reason %s, asking nothing upstream",
    async (mode, reason) => {
      const before = upstream.requests.length
      const marker = `never-sent-${randomBytes(6).toString("hex")}`
      const response = await confidential(mode, marker)
      expect(response.status).toBe(503)
      expect(response.body.error).toMatchObject({ code: "privacy_class_runtime_unavailable", param: "privacy.class" })
      expect(response.body.error.message).toContain(`reason: ${reason}`)
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0)
      expect(upstream.requests.length).toBe(before)
      expect(JSON.stringify(upstream.requests)).not.toContain(marker)
    }
  )
})
