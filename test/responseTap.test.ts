/** The response tap behind every test gateway's leak scan: it must see what a server sends, and only that. */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "vitest"
import { secretsOf, tapResponses } from "./support/responseTap.ts"

describe("response tap", () => {
  it("records status, headers and streamed bodies from its port, except for skipped keys", async () => {
    const server = createServer((req, res) => {
      res.writeHead(200, { "x-upstream": "leaky-provider-x" })
      res.write("data: part one\n\n")
      res.end(`data: ${req.url}\n\n`)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const { port } = server.address() as AddressInfo
    const tap = tapResponses(port, new Set(["operator-key"]))
    try {
      await (await fetch(`http://127.0.0.1:${port}/caller`, { headers: { authorization: "Bearer caller-key" } })).text()
      await (await fetch(`http://127.0.0.1:${port}/operator`, { headers: { authorization: "Bearer operator-key" } })).text()
      expect(tap.texts()).toHaveLength(1)
      expect(tap.texts()[0]).toContain("leaky-provider-x")
      expect(tap.texts()[0]).toContain("data: part one")
      expect(tap.texts()[0]).toContain("/caller")
    } finally {
      tap.stop()
      server.close()
    }
  })

  it("scans for provider ids, hosts, explicit upstream models and keys, not for names a model id contains", () => {
    const config = {
      models: [{ id: "svc/metered" }],
      providers: [
        { id: "sandbox", plugin: "sandbox", deployments: [{ model: "svc/pro" }] },
        {
          id: "metered",
          plugin: "openai-compatible",
          baseUrl: "http://127.0.0.1:4711/v1",
          apiKeyEnv: "K",
          deployments: [{ model: "svc/metered", upstreamModel: "secret-model-9" }, { model: "svc/pro", upstreamModel: "m" }]
        }
      ]
    }
    expect([...secretsOf(config, { K: "sk-very-secret" })].sort()).toEqual(
      ["127.0.0.1:4711", "secret-model-9", "sk-very-secret"]
    )
  })
})
