/**
 * A client that sends its request too slowly (headers that never end, a body
 * that stops half way: the slow-loris shape) is cut at
 * `limits.requestTimeoutMs` with 408 `request_timeout` in the contract's
 * envelope, and its connection closed, instead of holding a socket for
 * Node's default five minutes.
 */
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
let chatKey: string

beforeAll(async () => {
  gateway = await startGateway({ config: { limits: { requestTimeoutMs: 600 } } })
  chatKey = (await gateway.account()).key
})
afterAll(async () => {
  await gateway?.close()
})

/** Writes `sent` on a raw connection and keeps it open; resolves with all the server wrote once it closed. */
const slowClient = (sent: string) =>
  new Promise<string>((resolve, reject) => {
    const { port } = new URL(gateway.url)
    const socket = connect(Number(port), "127.0.0.1", () => socket.write(sent))
    let received = ""
    socket.setEncoding("utf8")
    socket.on("data", (text: string) => void (received += text))
    socket.on("close", () => resolve(received))
    socket.on("error", reject)
  })

const envelopeOf = (raw: string) => JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4))

describe("request timeout", () => {
  it("cuts a body that stops half way with 408 request_timeout and closes the connection", async () => {
    const raw = await slowClient(
      "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" +
        `authorization: Bearer ${chatKey}\r\ncontent-length: 200\r\n\r\n{"model":`
    )
    expect(raw.slice(0, 300)).toMatch(/^HTTP\/1.1 408/)
    expect(envelopeOf(raw).error).toMatchObject({ code: "request_timeout", param: null })
    expect(envelopeOf(raw).error.request_id).toMatch(/^req_/)
  }, 20_000)

  it("cuts headers that never end the same way", async () => {
    const raw = await slowClient("GET /v1/models HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: 1\r\n")
    expect(raw.startsWith("HTTP/1.1 408")).toBe(true)
    expect(envelopeOf(raw).error.code).toBe("request_timeout")
  }, 20_000)

  it("still serves a request sent in time on the same server", async () => {
    expect((await gateway.request("GET", "/v1/models")).status).toBe(200)
  })
})
