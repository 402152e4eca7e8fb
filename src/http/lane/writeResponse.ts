/**
 * Writes an answer to Node's response, as the platform's server would: a
 * JSON answer encoded and written at once (`writeJson`: the chat lane's
 * answers and errors, no response object in between), an
 * `HttpServerResponse`'s body at once or, a stream, chunk by chunk, waiting
 * for `drain` when the socket is full. A stream that fails after its head
 * was sent cuts the connection (the SSE bodies here turn their failures into
 * frames first).
 */
import type { ServerResponse } from "node:http"
import type { HttpServerResponse } from "@effect/platform"
import { Chunk, Effect } from "effect"
import { forEachChunk } from "../../../services/pulledStream.ts"
import { utf8 } from "../utf8.ts"

/**
 * `body` as JSON with `status` and `headers` (given to be added to). Encoded whole: a chat answer or
 * an error's envelope is small (src/http/jsonSlices.ts slices the long lists other endpoints answer).
 */
export const writeJson = (res: ServerResponse, status: number, headers: Record<string, string>, body: unknown) => {
  if (res.writableEnded) return
  const bytes = utf8(JSON.stringify(body))
  headers["content-type"] = "application/json"
  headers["content-length"] = String(bytes.length)
  res.writeHead(status, headers)
  res.end(bytes)
}

/** `firstByte` is told when a streamed body's first chunk is written. */
export const writeResponse = (
  res: ServerResponse,
  response: HttpServerResponse.HttpServerResponse,
  headers: Record<string, string>,
  firstByte?: () => void
): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (res.writableEnded) return Effect.void
    const body = response.body
    res.writeHead(response.status, headers)
    switch (body._tag) {
      // A whole body is handed to the socket at once, and nothing waits for `end`'s callback (never
      // called when the connection closed first): what follows the answer runs while the client reads it.
      case "Uint8Array":
        res.end(body.body)
        return Effect.void
      case "Raw":
        res.end(body.body as string)
        return Effect.void
      case "Stream": {
        let waiting: (() => void) | undefined
        res.on("drain", () => {
          const resume = waiting
          waiting = undefined
          resume?.()
        })
        // A plain loop over the body's pull (services/pulledStream.ts): no stream is run to write it.
        return forEachChunk(body.stream, (chunk) => {
          if (Chunk.isEmpty(chunk)) return Effect.void
          firstByte?.()
          // One write per pulled chunk: Node sends each write as a chunk of its own, with its header.
          const full = !res.write(chunk.length === 1 ? Chunk.unsafeHead(chunk) : Buffer.concat(Chunk.toReadonlyArray(chunk)))
          return full ? Effect.async<void>((resume) => void (waiting = () => resume(Effect.void))) : Effect.void
        }).pipe(
          Effect.interruptible,
          Effect.matchCause({ onSuccess: () => void res.end(), onFailure: () => void res.destroy() })
        )
      }
      default:
        res.end()
        return Effect.void
    }
  })
