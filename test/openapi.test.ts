/**
 * `/openapi.json` is generated from the same declaration the server runs,
 * documents the real error envelope, streaming and every operation, and
 * passes Redocly's recommended lint rules (redocly.yaml) with nothing to report.
 */
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
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
      "/healthz",
      "/metrics",
      "/readyz",
      "/v1/admin/accounts",
      "/v1/admin/accounts/{id}",
      "/v1/admin/accounts/{id}/credits",
      "/v1/admin/accounts/{id}/keys",
      "/v1/admin/accounts/{id}/limits",
      "/v1/admin/keys/{id}",
      "/v1/agents",
      "/v1/agents/runs",
      "/v1/agents/{agentId}/chat",
      "/v1/agents/{id}",
      "/v1/agents/{id}/documents",
      "/v1/agents/{id}/documents/{documentId}",
      "/v1/chat/completions",
      "/v1/embeddings",
      "/v1/key",
      "/v1/logs",
      "/v1/models",
      "/v1/models/{id}",
      "/v1/monitoring",
      "/v1/privacy/keys",
      "/v1/providers/health",
      "/v1/receipts/{id}",
      "/v1/receipts/{id}/transcript",
      "/v1/responses",
      "/v1/usage"
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
    // So are the probes a load balancer calls.
    expect(spec.paths["/healthz"].get.security ?? []).toEqual([])
    expect(spec.paths["/readyz"].get.security ?? []).toEqual([])
    expect(Object.keys(spec.paths["/readyz"].get.responses)).toContain("503")
    const envelope = spec.components.schemas.ErrorEnvelope
    expect(envelope.properties.error.required.sort()).toEqual(["code", "message", "param", "request_id", "type"])
  })

  it("summarises every operation, describes every tag, and names its servers and license", async () => {
    const { body: spec } = await gateway.request("GET", "/openapi.json", { key: null })
    const operations = Object.entries(spec.paths as Record<string, Record<string, { summary?: string; tags: Array<string> }>>)
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ at: `${method} ${path}`, ...operation })))
    expect(operations.filter((operation) => (operation.summary ?? "").length <= 5).map((operation) => operation.at)).toEqual([])
    const tags = new Set(operations.flatMap((operation) => operation.tags))
    expect(spec.tags.map((tag: { name: string }) => tag.name).sort()).toEqual([...tags].sort())
    for (const tag of spec.tags) expect(tag.description, tag.name).toEqual(expect.any(String))
    expect(spec.info.license).toEqual({ name: "Apache-2.0", identifier: "Apache-2.0" })
    expect(spec.servers.map((server: { url: string }) => server.url)).toEqual(["/", "http://127.0.0.1:8080"])
  })

  it("declares the event stream a streaming call answers with, beside its JSON", async () => {
    const { body: spec } = await gateway.request("GET", "/openapi.json", { key: null })
    const ok = spec.paths["/v1/chat/completions"].post.responses["200"]
    expect(Object.keys(ok.content).sort()).toEqual(["application/json", "text/event-stream"])
    expect(ok.content["text/event-stream"].schema).toMatchObject({ type: "string", description: expect.stringContaining("[DONE]") })
    const responses = spec.paths["/v1/responses"].post.responses["200"]
    expect(Object.keys(responses.content).sort()).toEqual(["application/json", "text/event-stream"])
    // Only streaming endpoints stream.
    expect(Object.keys(spec.paths["/v1/embeddings"].post.responses["200"].content)).toEqual(["application/json"])
  })

  it("passes Redocly's recommended rules with no error and no warning", async () => {
    const { body: spec } = await gateway.request("GET", "/openapi.json", { key: null })
    const dir = mkdtempSync(join(tmpdir(), "svc-openapi-"))
    try {
      const file = join(dir, "openapi.json")
      writeFileSync(file, JSON.stringify(spec))
      const root = join(import.meta.dirname, "..")
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [join(root, "node_modules/@redocly/cli/bin/cli.js"), "lint", file, "--config", join(root, "redocly.yaml"), "--format", "json"],
        { cwd: root, env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" } }
      ).catch((failure: { stdout?: string }) => ({ stdout: failure.stdout ?? "" }))
      const report = JSON.parse(stdout) as { totals: Record<string, number>; problems: Array<{ ruleId: string; message: string }> }
      expect(report.problems.map((problem) => `${problem.ruleId}: ${problem.message}`)).toEqual([])
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  it("documents a decode failure the way the server answers it", async () => {
    const response = await gateway.request("POST", "/v1/admin/accounts", { body: { name: 5 } })
    expect(response.status).toBe(400)
    expect(Object.keys(response.body.error).sort()).toEqual(["code", "message", "param", "request_id", "type"])
  })
})
