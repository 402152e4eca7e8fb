/**
 * Responses events over Server-Sent Events, as OpenAI frames them: an
 * `event:` line with the type and a `data:` line with the event; no `[DONE]`.
 */
import { HttpServerResponse } from "@effect/platform"
import type { Stream } from "effect"
import { utf8 } from "../http/utf8.ts"
import type { ResponsesEvent } from "./events.ts"

export const eventFrame = (event: ResponsesEvent) => utf8(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)

export const responsesSse = (frames: Stream.Stream<Uint8Array>) =>
  HttpServerResponse.stream(frames, {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
  })
