/**
 * Server-Sent Events for streamed completions, in OpenAI's framing: one
 * `data: <json>` frame per chunk and `data: [DONE]` at the end, the frames of
 * a batch written together. A failure after
 * the first byte cannot change the status any more, so it becomes a final
 * frame carrying the error envelope.
 */
import { HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, FiberRef, Stream } from "effect"
import { type ApiError, currentRequestId, envelopeOf } from "../../services/ApiError.ts"
import type { ChatChunk } from "../../services/Chat.ts"

const encoder = new TextEncoder()
const frame = (data: string) => encoder.encode(`data: ${data}\n\n`)
const DONE = frame("[DONE]")

/**
 * The frames of a batch of chunks (the relay passes at most a few at a time) as one piece of
 * bytes: one encoding and one socket write per batch, where a piece per frame cost a chunked-encoding
 * header and a write each.
 */
const framesOf = (chunks: Chunk.Chunk<ChatChunk>): Chunk.Chunk<Uint8Array> => {
  if (Chunk.isEmpty(chunks)) return Chunk.empty()
  let text = ""
  for (const chunk of chunks) text += `data: ${JSON.stringify(chunk)}\n\n`
  return Chunk.of(encoder.encode(text))
}

const errorFrame = (error: ApiError) =>
  Effect.map(FiberRef.get(currentRequestId), (request_id) =>
    frame(JSON.stringify(envelopeOf(error, request_id))))

export const sseResponse = (chunks: Stream.Stream<ChatChunk, ApiError>) =>
  HttpServerResponse.stream(
    chunks.pipe(
      Stream.mapChunks(framesOf),
      Stream.concat(Stream.succeed(DONE)),
      Stream.catchAll((error) => Stream.fromEffect(errorFrame(error)))
    ),
    {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
    }
  )
