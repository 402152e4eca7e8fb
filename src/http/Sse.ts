/**
 * Server-Sent Events for streamed completions, in OpenAI's framing: one
 * `data: <json>` frame per chunk and `data: [DONE]` at the end. A failure after
 * the first byte cannot change the status any more, so it becomes a final
 * frame carrying the error envelope.
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef, Stream } from "effect"
import { type ApiError, currentRequestId, envelopeOf } from "../../services/ApiError.ts"
import type { ChatChunk } from "../../services/Chat.ts"

const encoder = new TextEncoder()
const frame = (data: string) => encoder.encode(`data: ${data}\n\n`)
const DONE = frame("[DONE]")

const errorFrame = (error: ApiError) =>
  Effect.map(FiberRef.get(currentRequestId), (request_id) =>
    frame(JSON.stringify(envelopeOf(error, request_id))))

export const sseResponse = (chunks: Stream.Stream<ChatChunk, ApiError>) =>
  HttpServerResponse.stream(
    chunks.pipe(
      Stream.map((chunk) => frame(JSON.stringify(chunk))),
      Stream.concat(Stream.succeed(DONE)),
      Stream.catchAll((error) => Stream.fromEffect(errorFrame(error)))
    ),
    {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
    }
  )
