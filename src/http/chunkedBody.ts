/**
 * Bodies sent without a `content-length` (chunked) cannot be refused up
 * front. Reading them with the platform's limit destroys the socket on the
 * first byte too many, so the caller never sees the 413. Here the body is read
 * with the limit, the rest is drained (up to a hard cap) so the 413 can be
 * delivered, and the request handed on carries the text already read.
 */
import type { IncomingMessage } from "node:http"
import type { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect } from "effect"

/** How much of an oversized body is drained before the connection is dropped. */
const DRAIN_FACTOR = 4

const readLimited = (source: IncomingMessage, limit: number) =>
  Effect.async<{ readonly text: string } | { readonly tooLarge: true }>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    source.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size <= limit) chunks.push(chunk)
      else if (size > limit * DRAIN_FACTOR) source.destroy()
    })
    source.once("end", () =>
      resume(Effect.succeed(size > limit ? { tooLarge: true } : { text: Buffer.concat(chunks).toString("utf8") })))
    source.once("error", () => resume(Effect.succeed({ tooLarge: true })))
    source.once("close", () => size > limit && resume(Effect.succeed({ tooLarge: true })))
  })

/** Reads a chunked body; succeeds with a request whose `text` is that body, or fails when it is over `limit`. */
export const withChunkedBody = (request: HttpServerRequest.HttpServerRequest, limit: number) =>
  Effect.map(readLimited(NodeHttpServerRequest.toIncomingMessage(request), limit), (result) => {
    if ("tooLarge" in result) return undefined
    // `json` reads `this.text`, so overriding `text` on a derived object serves the body we already read.
    return Object.create(request, { text: { value: Effect.succeed(result.text) } }) as HttpServerRequest.HttpServerRequest
  })
