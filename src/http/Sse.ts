/**
 * Server-Sent Events for streamed completions, in OpenAI's framing: one
 * `data: <json>` frame per chunk and `data: [DONE]` at the end, the frames of
 * a batch written together. A failure after
 * the first byte cannot change the status any more, so it becomes a final
 * frame carrying the error envelope. Framing is a stage over the answer's
 * pull (services/pulledStream.ts).
 */
import { HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, FiberRef, Option, type Stream } from "effect"
import { type ApiError, currentRequestId, envelopeOf } from "../../services/ApiError.ts"
import type { ChatChunk } from "../../services/Chat.ts"
import { type Pull, throughPull } from "../../services/pulledStream.ts"
import { utf8 } from "./utf8.ts"

const frame = (data: string) => utf8(`data: ${data}\n\n`)
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
  return Chunk.of(utf8(text))
}

const errorFrame = (error: ApiError) =>
  Effect.map(FiberRef.get(currentRequestId), (request_id) =>
    frame(JSON.stringify(envelopeOf(error, request_id))))

/** The frames of each pull's chunks, then `[DONE]` at the end, or an error frame where it fails. */
const framesPull = (pull: Pull<ChatChunk, ApiError>): Pull<Uint8Array, never> => {
  let over = false
  return Effect.suspend(() =>
    over ? Effect.fail(Option.none()) : Effect.matchEffect(pull, {
      onSuccess: (chunks) => Effect.succeed(framesOf(chunks)),
      onFailure: (failure) => {
        over = true
        return Option.isNone(failure) ? Effect.succeed(Chunk.of(DONE)) : Effect.map(errorFrame(failure.value), Chunk.of)
      }
    })
  )
}

export const sseResponse = (chunks: Stream.Stream<ChatChunk, ApiError>) =>
  HttpServerResponse.stream(
    throughPull(chunks, framesPull),
    {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
    }
  )
