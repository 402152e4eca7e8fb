/**
 * A streamed agent run as Server-Sent Events (CONTRACT.md "Agents"): each
 * event an `event: NAME` line and a `data: JSON` line — `run.created` (the
 * ids), `sources` (the sources array), `output.delta` (`{"text"}`, many), and
 * `run.completed` (the whole run record), or `error` (the error envelope) when
 * the run fails after its first event.
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef, Stream } from "effect"
import type { RunEvent } from "../../services/AgentRuns.ts"
import { type ApiError, currentRequestId, envelopeOf } from "../../services/ApiError.ts"
import { toRunRecord, toSourceRecord } from "../handlers/runRecord.ts"
import { utf8 } from "./utf8.ts"

const frame = (event: string, data: unknown) => utf8(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)

const eventFrame = (event: RunEvent) => {
  switch (event._tag) {
    case "Created":
      return frame("run.created", { agent_id: event.agentId, conversation_id: event.conversationId, receipt_id: event.receiptId })
    case "Sources":
      return frame("sources", event.sources.map(toSourceRecord))
    case "Delta":
      return frame("output.delta", { text: event.text })
    case "Completed":
      return frame("run.completed", toRunRecord(event.result))
  }
}

const errorFrame = (error: ApiError) =>
  Effect.map(FiberRef.get(currentRequestId), (requestId) => frame("error", envelopeOf(error, requestId)))

export const runEventsResponse = (events: Stream.Stream<RunEvent, ApiError>) =>
  HttpServerResponse.stream(
    events.pipe(Stream.map(eventFrame), Stream.catchAll((error) => Stream.fromEffect(errorFrame(error)))),
    { contentType: "text/event-stream", headers: { "cache-control": "no-cache", "x-accel-buffering": "no" } }
  )
