/** The catalogue: house models with the spec's prices, configured models, and only what some deployment serves. */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
let key: string

beforeAll(async () => {
  gateway = await startGateway({
    config: {
      models: [
        {
          id: "svc/acme/large-v2",
          name: "Acme Large",
          created: 1700000000,
          ownedBy: "acme",
          context: 64000,
          pricing: { input: "0.50", output: "1.50" },
          modalities: ["text"],
          capabilities: ["chat", "streaming", "tools", "structured_output"],
          quality: 0.7
        },
        { id: "svc/undeployed", context: 8000, pricing: { input: "1", output: "2" }, modalities: ["text"], capabilities: ["chat"] }
      ],
      providers: [
        {
          id: "house",
          plugin: "sandbox",
          deployments: [{ model: "svc/pro" }, { model: "svc/embed" }, { model: "svc/acme/large-v2" }]
        },
        {
          id: "remote",
          plugin: "openai-compatible",
          baseUrl: "http://127.0.0.1:9/v1",
          deployments: [{ model: "svc/acme/large-v2", upstreamModel: "large" }]
        }
      ]
    }
  })
  key = (await gateway.account({ scopes: ["monitoring"] })).key
})
afterAll(() => gateway?.close())

const get = (path: string) => gateway.request("GET", path, { key })

describe("catalogue", () => {
  it("lists only deployed models, house ones with the spec's prices", async () => {
    const { body, status } = await get("/v1/models")
    expect(status).toBe(200)
    expect(body.object).toBe("list")
    expect(body.data.map((model: any) => model.id)).toEqual(["svc/pro", "svc/embed", "svc/acme/large-v2"])
    expect(body.data[0]).toEqual({
      id: "svc/pro",
      object: "model",
      created: 1767225600,
      owned_by: "svc",
      name: "Pro",
      context_length: 300000,
      pricing: { input: "0.8", output: "3.2" },
      modalities: ["text", "image"],
      capabilities: ["chat", "vision", "streaming"],
      supported_parameters: expect.arrayContaining(["temperature", "max_tokens", "stream"]),
      privacy_classes: ["standard_route", "protected_provider_route", "private_gateway_route"],
      tier: "pro"
    })
    expect(body.data[1]).toMatchObject({ id: "svc/embed", pricing: { input: "0.02" }, capabilities: ["embeddings"], tier: "embed" })
    expect(body.data[1].pricing).not.toHaveProperty("output")
  })

  it("describes a configured model, with the classes its deployments can earn", async () => {
    const { body } = await get("/v1/models/svc/acme/large-v2")
    expect(body).toMatchObject({
      id: "svc/acme/large-v2",
      name: "Acme Large",
      created: 1700000000,
      owned_by: "acme",
      context_length: 64000,
      pricing: { input: "0.5", output: "1.5" },
      tier: "third_party",
      // The sandbox deployment earns up to private; the remote one says nothing about its policy.
      privacy_classes: ["standard_route", "protected_provider_route", "private_gateway_route"]
    })
    expect(body.supported_parameters).toEqual(expect.arrayContaining(["tools", "tool_choice", "response_format"]))
  })

  it("answers a model id in both path forms", async () => {
    const plain = await get("/v1/models/svc/pro")
    const encoded = await get("/v1/models/svc%2Fpro")
    expect(plain.status).toBe(200)
    expect(encoded.body).toEqual(plain.body)
    expect((await get("/v1/models/svc%2Facme%2Flarge-v2")).body.id).toBe("svc/acme/large-v2")
  })

  it("does not list or describe a model without a deployment", async () => {
    expect((await get("/v1/models/svc/undeployed")).status).toBe(404)
    expect((await get("/v1/models/svc/premier")).status).toBe(404)
  })

  it("needs a valid key, of any scope", async () => {
    expect((await gateway.request("GET", "/v1/models", { key: null })).status).toBe(401)
  })
})
