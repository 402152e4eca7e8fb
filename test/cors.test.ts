/**
 * CORS for browser apps: off by default (no preflight answer, no CORS
 * headers, so a browser refuses cross-origin calls), and with `cors.origins`
 * configured, a listed origin's preflight is answered and every response,
 * errors included, names that origin and exposes the headers a client reads;
 * an origin not listed gets nothing. An origin with a path stops the start.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseConfigFile } from "../layers/platform/ConfigLive.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const APP = "https://app.example"

let plain: TestGateway
let open: TestGateway

beforeAll(async () => {
  ;[plain, open] = await Promise.all([
    startGateway(),
    startGateway({ config: { cors: { origins: [APP, "http://localhost:5173"] } } })
  ])
}, 120_000)

afterAll(async () => {
  await Promise.all([plain?.close(), open?.close()])
})

const preflight = (gateway: TestGateway, origin: string) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" }
  })

describe("CORS", () => {
  it("is off by default: no preflight answer and no CORS headers", async () => {
    const answer = await preflight(plain, APP)
    expect(answer.status).toBe(404)
    expect(answer.headers.get("access-control-allow-origin")).toBeNull()
    const models = await plain.request("GET", "/v1/models", { headers: { origin: APP } })
    expect(models.status).toBe(200)
    expect(models.headers.get("access-control-allow-origin")).toBeNull()
  })

  it("answers a listed origin's preflight, naming that origin", async () => {
    const answer = await preflight(open, APP)
    expect(answer.status).toBe(204)
    expect(answer.headers.get("access-control-allow-origin")).toBe(APP)
    expect(answer.headers.get("access-control-allow-methods")).toContain("POST")
    expect(answer.headers.get("access-control-allow-headers")).toBe("authorization,content-type")
    expect(answer.headers.get("access-control-allow-credentials")).toBeNull()
  })

  it("gives an origin not listed no permission", async () => {
    const answer = await preflight(open, "https://evil.example")
    expect(answer.headers.get("access-control-allow-origin")).toBeNull()
    const models = await open.request("GET", "/v1/models", { headers: { origin: "https://evil.example" } })
    expect(models.headers.get("access-control-allow-origin")).toBeNull()
  })

  it("lets a listed origin read a billed answer's headers, and its errors", async () => {
    const { key } = await open.account({ credit: "1" })
    const chat = await open.request("POST", "/v1/chat/completions", {
      key,
      headers: { origin: "http://localhost:5173" },
      body: { model: "svc/swift", messages: [{ role: "user", content: "hi" }] }
    })
    expect(chat.status).toBe(200)
    expect(chat.headers.get("access-control-allow-origin")).toBe("http://localhost:5173")
    // The answer depends on the origin: a shared cache must not hand it to another one.
    expect(chat.headers.get("vary")).toContain("Origin")
    const exposed = chat.headers.get("access-control-expose-headers")!.split(",")
    for (const header of ["x-request-id", "x-svc-receipt-id", "x-svc-total-usd", "x-ratelimit-remaining-requests"]) {
      expect(exposed).toContain(header)
    }
    const refused = await open.request("GET", "/v1/models", { key: "svc_live_nope", headers: { origin: APP } })
    expect(refused.status).toBe(401)
    expect(refused.headers.get("access-control-allow-origin")).toBe(APP)
  })

  it.each([["https://app.example/"], ["app.example"], ["https://app.example/path"]])("refuses the origin %j in the config", (origin) => {
    const parsed = Effect.runSync(Effect.either(parseConfigFile({ cors: { origins: [origin] } })))
    expect(parsed._tag).toBe("Left")
    if (parsed._tag === "Left") expect(parsed.left.message).toMatch(/^cors\.origins\[0\]: /)
  })
})
