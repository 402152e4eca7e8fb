/**
 * An upstream's SSE body read as events (plugins/support/sse.ts): the same
 * events however the bytes are cut into reads, `event:` names kept, comments
 * skipped; an event that grows past 10 MiB without ending, or a body that ends
 * before the upstream said it was done, is a `protocol` failure.
 */
import { Effect, Either, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { type SseEvent, sseStream, type Translation } from "../plugins/support/sse.ts"
import type { UpstreamBody } from "../plugins/support/streamedAnswer.ts"

const translate = (event: SseEvent): Translation<string> =>
  event.data === "[DONE]" ? { out: [], done: true } : { out: [`${event.event}:${event.data}`], done: false }

/** A body whose reads bring `parts` one by one. */
const bodyOf = (parts: ReadonlyArray<string | Buffer>): UpstreamBody => {
  let next = 0
  return {
    read: () => Effect.sync(() => (next < parts.length ? Buffer.from(parts[next++]!) : undefined)),
    now: () => Date.now(),
    complete: () => {},
    release: () => {}
  }
}

const read = (parts: ReadonlyArray<string | Buffer>, endMarker = true) =>
  Effect.runPromise(Effect.either(Stream.runCollect(sseStream(bodyOf(parts), translate, { endMarker }))))
    .then(Either.map((chunk) => [...chunk]))

const BODY = ": keep-alive\n\ndata: {\"a\":1}\n\nevent: ping\ndata: x\ndata: y\n\r\ndata: é→😀\n\ndata: [DONE]\n\n"
const EVENTS = ["message:{\"a\":1}", "ping:x\ny", "message:é→😀"]

describe("upstream SSE", () => {
  it("gives the same events however the body is cut, even inside a character", async () => {
    const bytes = Buffer.from(BODY)
    expect(await read([bytes])).toEqual(Either.right(EVENTS))
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(await read([bytes.subarray(0, cut), bytes.subarray(cut)])).toEqual(Either.right(EVENTS))
    }
    expect(await read([...bytes].map((byte) => Buffer.from([byte])))).toEqual(Either.right(EVENTS))
  })

  it("fails a body that ends before the upstream's end, unless none is expected", async () => {
    const cut = await read(["data: one\n\n"])
    expect(Either.getLeft(cut).pipe((left) => left._tag === "Some" && left.value.kind)).toBe("protocol")
    expect(await read(["data: one\n\n"], false)).toEqual(Either.right(["message:one"]))
  })

  it("fails an event that grows past 10 MiB without ending", async () => {
    const mib = "x".repeat(1024 * 1024)
    const result = await read(["data: ", ...Array.from({ length: 11 }, () => mib)])
    const failure = Either.getLeft(result)
    expect(failure._tag === "Some" && failure.value.kind).toBe("protocol")
    expect(failure._tag === "Some" && failure.value.detail).toMatch(/over 10 MiB/)
  })
})
