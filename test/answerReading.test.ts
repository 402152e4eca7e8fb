/**
 * Upstream answers read through undici's handler interface
 * (plugins/support/answerReading.ts), against a real HTTP server on a
 * loopback port: a streamed body arrives whole however it is written and
 * however slowly it is read; a body let go of before its end is aborted, and
 * one let go of once complete is drained so its connection is reused; a
 * non-2xx answer is its status and what its error says. A head or a whole
 * answer not come by the attempt's end, and a read past its limit, fail as
 * timeouts (the request let go of).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { setTimeout as sleep } from "node:timers/promises"
import { Effect, Exit, Fiber } from "effect"
import { Agent } from "undici"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { UpstreamFailure } from "../services/Providers.ts"
import { wholeAnswer } from "../plugins/support/answerReading.ts"
import { fail } from "../plugins/support/json.ts"
import { streamedAnswer, type UpstreamBody } from "../plugins/support/streamedAnswer.ts"

let server: Server
let origin: string
const agent = new Agent({ keepAliveTimeout: 30_000 })
/** Every connection the server accepted, and what became of each request. */
const sockets = new Set<Socket>()
const closedEarly: Array<string> = []
let handle: (request: IncomingMessage, response: ServerResponse) => void = () => {}

beforeAll(async () => {
  server = createServer((request, response) => {
    response.on("close", () => {
      if (!response.writableFinished) closedEarly.push(request.url ?? "")
    })
    handle(request, response)
  })
  server.on("connection", (socket) => sockets.add(socket))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  await agent.destroy()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const open = (path: string, endAt?: number) => streamedAnswer(agent, { origin, path, method: "POST", body: "{}" }, Effect.runSync(Effect.clock), endAt)

/** Reads the body to its end, waiting `pauseMs` between reads; its bytes joined. */
const readAll = (body: UpstreamBody, pauseMs = 0) =>
  Effect.gen(function*() {
    const parts: Array<Uint8Array> = []
    for (;;) {
      const bytes = yield* body.read()
      if (bytes === undefined) return Buffer.concat(parts)
      parts.push(bytes)
      if (pauseMs > 0) yield* Effect.sleep(pauseMs)
    }
  })

const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await sleep(10)
  return done()
}

describe("a streamed upstream answer", () => {
  it("arrives whole, in order, written in many pieces and read slowly (past the high-water mark)", async () => {
    const piece = (i: number) => Buffer.alloc(16 * 1024, i % 251)
    handle = (_, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" })
      let i = 0
      const write = () => {
        while (i < 64) if (!response.write(piece(i++))) return void response.once("drain", write)
        response.end()
      }
      write()
    }
    const answer = open("/whole")
    expect(await Effect.runPromise(answer.head)).toBeUndefined()
    const bytes = await Effect.runPromise(readAll(answer.body, 2))
    expect(bytes.equals(Buffer.concat(Array.from({ length: 64 }, (_, i) => piece(i))))).toBe(true)
  })

  it("aborts a body let go of before its end, and drains one let go of once complete, keeping its connection", async () => {
    handle = (_, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.write("data: first\n\n")
      // The rest comes a moment later: the early release must not wait for it.
      setTimeout(() => response.end("data: rest\n\n"), 50)
    }
    const cut = open("/cut")
    await Effect.runPromise(cut.head)
    await Effect.runPromise(cut.body.read())
    cut.body.release()
    expect(await until(() => closedEarly.includes("/cut"))).toBe(true)

    const drained = open("/drained")
    await Effect.runPromise(drained.head)
    await Effect.runPromise(drained.body.read())
    const before = sockets.size
    drained.body.complete()
    drained.body.release()
    await sleep(100)
    expect(closedEarly).not.toContain("/drained")
    // The next request rides the drained answer's connection.
    handle = (_, response) => response.end("ok")
    const next = open("/next")
    await Effect.runPromise(next.head)
    expect((await Effect.runPromise(readAll(next.body))).toString()).toBe("ok")
    expect(sockets.size).toBe(before)
  })

  it("is its status, Retry-After and error kind when not 2xx, with the free text left out", async () => {
    handle = (_, response) => {
      response.writeHead(429, { "content-type": "application/json", "retry-after": "7" })
      response.end(JSON.stringify({ error: { type: "rate_limit_error", message: "secret detail ".repeat(5000) } }))
    }
    const status = await Effect.runPromise(open("/limited").head)
    expect(status).toMatchObject({ status: 429, retryAfter: "7" })
    expect(status?.kind).not.toContain("secret")
  })

  it("aborts the request when the wait for its head is interrupted", async () => {
    handle = () => {}
    const answer = open("/silent")
    const fiber = Effect.runFork(answer.head)
    await sleep(50)
    expect(Exit.isInterrupted(await Effect.runPromise(Fiber.interrupt(fiber)))).toBe(true)
    expect(await until(() => closedEarly.includes("/silent"))).toBe(true)
  })

  it("fails a body that breaks off with the transport's failure, after the bytes that came", async () => {
    handle = (_, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.write("data: partial\n\n", () => setTimeout(() => response.destroy(), 20))
    }
    const answer = open("/broken")
    await Effect.runPromise(answer.head)
    expect(Buffer.from((await Effect.runPromise(answer.body.read()))!).toString()).toBe("data: partial\n\n")
    const end = await Effect.runPromise(Effect.either(answer.body.read()))
    expect(end._tag === "Left" && end.left.kind).toBe("connection")
  })
})

describe("a streamed upstream answer's waits", () => {
  it("fail as a timeout when the head has not come by the attempt's end, and let go of the request", async () => {
    handle = () => {}
    const endAt = Date.now() + 100
    const result = await Effect.runPromise(Effect.either(open("/no-head", endAt).head))
    expect(Date.now()).toBeGreaterThanOrEqual(endAt - 5)
    expect(result._tag === "Left" && result.left).toMatchObject({ kind: "timeout", detail: expect.stringMatching(/^the attempt ran out of time/) })
    expect(await until(() => closedEarly.includes("/no-head"))).toBe(true)
  })

  it("fail with the reader's failure past its limit, and only when nothing came", async () => {
    handle = (_, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.write("data: first\n\n")
    }
    const answer = open("/quiet")
    await Effect.runPromise(answer.head)
    const limit = (ms: number) => ({ at: Date.now() + ms, expired: () => new UpstreamFailure({ kind: "timeout", detail: "quiet" }) })
    // Bytes already there are read at once, whatever the limit.
    expect(Buffer.from((await Effect.runPromise(answer.body.read(limit(0))))!).toString()).toBe("data: first\n\n")
    const started = Date.now()
    const result = await Effect.runPromise(Effect.either(answer.body.read(limit(80))))
    expect(Date.now() - started).toBeGreaterThanOrEqual(75)
    expect(result._tag === "Left" && result.left.detail).toBe("quiet")
    answer.body.release()
  })
})

describe("a whole upstream answer", () => {
  it("is the body's text, however it is cut", async () => {
    handle = (_, response) => {
      response.write("hello, ")
      setTimeout(() => response.end("world"), 10)
    }
    expect(await Effect.runPromise(wholeAnswer(agent, { origin, path: "/text", method: "POST", body: "{}" }, (text) => text))).toBe("hello, world")
  })

  it("is read by its reader as it ends, and a reader's throw is the upstream's protocol failure", async () => {
    handle = (_, response) => void response.end(JSON.stringify({ answer: 42 }))
    const read = (text: string) => {
      const json = JSON.parse(text)
      if (typeof json.answer !== "number") fail("answer is not a number")
      return json.answer as number
    }
    expect(await Effect.runPromise(wholeAnswer(agent, { origin, path: "/json", method: "POST", body: "{}" }, read))).toBe(42)
    handle = (_, response) => void response.end(JSON.stringify({ answer: "many" }))
    const malformed = await Effect.runPromise(Effect.either(wholeAnswer(agent, { origin, path: "/json", method: "POST", body: "{}" }, read)))
    expect(malformed._tag === "Left" && malformed.left).toMatchObject({ kind: "protocol", detail: "answer is not a number" })
    handle = (_, response) => void response.end("not json")
    const broken = await Effect.runPromise(Effect.either(wholeAnswer(agent, { origin, path: "/json", method: "POST", body: "{}" }, read)))
    expect(broken._tag === "Left" && broken.left).toMatchObject({ kind: "protocol", detail: "invalid JSON from upstream" })
  })

  it("fails with a non-2xx answer's status, what its body says and its Retry-After, never reading it", async () => {
    handle = (_, response) => {
      response.writeHead(429, { "content-type": "application/json", "retry-after": "7" })
      response.end(JSON.stringify({ error: { type: "rate_limit_error", message: "slow down, you said: secret" } }))
    }
    let read = 0
    const result = await Effect.runPromise(Effect.either(wholeAnswer(agent, { origin, path: "/busy", method: "POST", body: "{}" }, () => read++)))
    expect(read).toBe(0)
    expect(result._tag === "Left" && result.left).toMatchObject({ kind: "status", status: 429, retryAfterSeconds: 7 })
    expect(result._tag === "Left" && result.left.detail).toContain("rate_limit_error")
    expect(result._tag === "Left" && result.left.detail).not.toContain("secret")
  })

  it("fails as a timeout at its end, and aborts the request", async () => {
    handle = (_, response) => void response.write("never ends")
    const endAt = Date.now() + 100
    const result = await Effect.runPromise(Effect.either(wholeAnswer(agent, { origin, path: "/late", method: "POST", body: "{}" }, (text) => text, endAt)))
    expect(Date.now()).toBeGreaterThanOrEqual(endAt - 5)
    expect(result._tag === "Left" && result.left).toMatchObject({ kind: "timeout", detail: expect.stringMatching(/^the attempt ran out of time/) })
    expect(await until(() => closedEarly.includes("/late"))).toBe(true)
  })
})
