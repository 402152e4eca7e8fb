/** `/openapi.json` is generated from the same declaration the server runs, and documents the real error envelope. */
import { OpenApi } from "@effect/platform"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Api } from "../src/api/Api.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
beforeAll(async () => {
  gateway = await startGateway()
})
afterAll(() => gateway?.close())

describe("openapi.json", () => {
  it("is served without a key and equals the document derived from the Api value", async () => {
    const response = await gateway.request("GET", "/openapi.json", { key: null })
    expect(response.status).toBe(200)
    expect(response.body).toEqual(JSON.parse(JSON.stringify(OpenApi.fromApi(Api))))
  })

  it("lists every route the server answers, with its errors in the contract's envelope", async () => {
    const { body: spec } = await gateway.request("GET", "/openapi.json", { key: null })
    expect(Object.keys(spec.paths).sort()).toEqual([
      "/v1/admin/accounts",
      "/v1/admin/accounts/{id}",
      "/v1/admin/accounts/{id}/credits",
      "/v1/admin/accounts/{id}/keys",
      "/v1/admin/accounts/{id}/limits",
      "/v1/admin/keys/{id}",
      "/v1/chat/completions",
      "/v1/embeddings",
      "/v1/models",
      "/v1/models/{id}",
      "/v1/privacy/keys",
      "/v1/providers/health",
      "/v1/receipts/{id}",
      "/v1/receipts/{id}/transcript"
    ])
    const chat = spec.paths["/v1/chat/completions"].post
    expect(chat.requestBody.content["application/json"].schema.$ref).toBe("#/components/schemas/ChatCompletionRequest")
    for (const status of ["400", "401", "402", "413", "429", "500", "502", "504"]) {
      expect(JSON.stringify(chat.responses[status].content["application/json"].schema)).toContain(
        "\"#/components/schemas/ErrorEnvelope\""
      )
    }
    expect(JSON.stringify(spec)).not.toContain("HttpApiDecodeError")
    // Public keys are public: the JWKS needs no API key.
    expect(spec.paths["/v1/privacy/keys"].get.security ?? []).toEqual([])
    const envelope = spec.components.schemas.ErrorEnvelope
    expect(envelope.properties.error.required.sort()).toEqual(["code", "message", "param", "request_id"])
  })

  it("documents a decode failure the way the server answers it", async () => {
    const response = await gateway.request("POST", "/v1/admin/accounts", { body: { name: 5 } })
    expect(response.status).toBe(400)
    expect(Object.keys(response.body.error).sort()).toEqual(["code", "message", "param", "request_id"])
  })
})
