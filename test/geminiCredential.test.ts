/**
 * Gemini refuses a bad API key with 400 `INVALID_ARGUMENT` (reason
 * `API_KEY_INVALID`), the status of a caller's own bad request. The gateway
 * blames its own credential: the deployment is at fault, the call fails over,
 * and a caller with no other route gets 502 `upstream_error`, never a 400.
 */
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeGemini, startFakeGemini } from "./support/fakeGeminiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const keyRefused = {
  error: {
    code: 400,
    message: "API key not valid. Please pass a valid API key.",
    status: "INVALID_ARGUMENT",
    details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }]
  }
}

let refusing: FakeGemini
let healthy: FakeGemini
let gateway: TestGateway
let client: OpenAI
let accountId: string

const balance = async () => (await gateway.request("GET", `/v1/admin/accounts/${accountId}`)).body.balance_usd as string

const model = (id: string) => ({
  id,
  context: 100_000,
  pricing: { input: "0.30", output: "2.50" },
  modalities: ["text"],
  capabilities: ["chat", "streaming"]
})
const gemini = (id: string, baseUrl: string, deployments: ReadonlyArray<{ model: string; weight?: number }>) => ({
  id,
  plugin: "gemini",
  baseUrl,
  apiKeyEnv: "GEMINI_TEST_KEY",
  timeoutMs: 2000,
  deployments: deployments.map((deployment) => ({ ...deployment, upstreamModel: "gemini-x", cost: { input: "0.25", output: "2.00" } }))
})

beforeAll(async () => {
  refusing = await startFakeGemini()
  healthy = await startFakeGemini()
  refusing.behave({ status: 400, errorBody: keyRefused })
  gateway = await startGateway({
    config: {
      models: [model("svc/solo"), model("svc/pair")],
      providers: [
        // The refusing provider is tried first for svc/pair (far higher weight).
        gemini("refusing", refusing.baseUrl, [{ model: "svc/solo" }, { model: "svc/pair", weight: 1000 }]),
        gemini("healthy", healthy.baseUrl, [{ model: "svc/pair", weight: 0.001 }])
      ]
    },
    env: { GEMINI_TEST_KEY: "AIza-test" }
  })
  const { id, key } = await gateway.account()
  accountId = id
  client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
})
afterAll(async () => {
  await gateway?.close()
  await refusing?.close()
  await healthy?.close()
})

const refusal = (request: Promise<unknown>) => request.then(() => undefined, (error: unknown) => error as InstanceType<typeof OpenAI.APIError>)

describe("a Gemini upstream that refuses our API key", () => {
  it("fails over to the next deployment, and the caller is served", async () => {
    const completion = await client.chat.completions.create({ model: "svc/pair", messages: [{ role: "user", content: "hi" }] })
    expect(completion.choices[0]!.message.content).toBe("hi")
    expect(refusing.requests.filter((request) => request.path.includes("gemini-x")).length).toBeGreaterThanOrEqual(1)
    expect(healthy.requests.length).toBe(1)
  })

  it("is 502 upstream_error for a model with no other route, tried once, with nothing charged", async () => {
    const before = await balance()
    const sent = refusing.requests.length
    const error = await refusal(client.chat.completions.create({ model: "svc/solo", messages: [{ role: "user", content: "hi" }] }))
    expect(error).toBeInstanceOf(OpenAI.APIError)
    expect(error!.status).toBe(502)
    expect(error!.code).toBe("upstream_error")
    expect(refusing.requests.length - sent).toBeLessThanOrEqual(1)
    expect(await balance()).toBe(before)
  })

  it("still passes a plain INVALID_ARGUMENT (the request's own fault) to the caller as 400", async () => {
    healthy.behave({ status: 400 })
    refusing.behave({ status: 400 })
    const error = await refusal(client.chat.completions.create({ model: "svc/pair", messages: [{ role: "user", content: "hi" }] }))
    expect(error!.status).toBe(400)
  })
})
