/**
 * An upstream's SSE body as a stream of translated items. Frames are parsed
 * with `eventsource-parser` (it finds line ends with `indexOf`; the parser of
 * `@effect/experimental` went character by character, a fifth of a streamed
 * call's CPU, docs/performance.md); each adapter supplies the
 * translation of one event (throwing `Malformed` for what it cannot use) and
 * says when the stream is complete. A body that ends before that is a
 * `protocol` failure (the answer was cut off); once complete, the stream ends
 * at once and the rest of the body is drained when it is released
 * (answerReading.ts), so its connection stays reusable.
 *
 * The stream is one pull per read of the body (answerReading.ts: the bytes
 * that came since the last read): parsed and translated in one synchronous
 * pass, its items one chunk. Composing it from
 * Effect's stream stages (read, interrupt-when-done, map, take-until, concat)
 * cost four times the whole JSON exchange per stream (docs/performance.md).
 */
import { createParser } from "eventsource-parser"
import { Chunk, Effect, Option, type Stream } from "effect"
import type { UpstreamFailure } from "../../services/Providers.ts"
import { pulledStream } from "../../services/pulledStream.ts"
import type { UpstreamBody } from "./answerReading.ts"
import { protocolFailure, protocolFailureOf } from "./json.ts"

/** One event: its type (`message` unless the upstream named one) and its data lines joined. */
export interface SseEvent {
  readonly event: string
  readonly data: string
  readonly id: string | undefined
}

/** Largest event kept while it is incomplete; past it the stream is malformed. */
const MAX_EVENT_CHARS = 10 * 1024 * 1024

export interface Translation<A> {
  readonly out: ReadonlyArray<A>
  /** The upstream said the answer is complete (OpenAI's `[DONE]`, Anthropic's `message_stop`). */
  readonly done: boolean
}

export const sseStream = <A>(
  body: UpstreamBody,
  /** Called per event, in order; a fresh closure per stream may keep state. */
  translate: (event: SseEvent) => Translation<A>,
  options: {
    /** Without an explicit end (Gemini), the body's end completes the stream. */
    readonly endMarker: boolean
  }
): Stream.Stream<A, UpstreamFailure> => {
  const decoder = new TextDecoder()
  let events: Array<SseEvent> = []
  /** The upstream said the answer is complete. */
  let done = false
  /** Nothing more comes: the body ended, or the answer is complete. */
  let over = false
  let tooLarge: string | undefined
  /** A failure met while translating a read: raised after the items translated before it. */
  let broken: UpstreamFailure | undefined
  const parser = createParser({
    maxBufferSize: MAX_EVENT_CHARS,
    onEvent: (event) => void events.push({ event: event.event ?? "message", data: event.data, id: event.id }),
    onError: (error) => {
      if (error.type === "max-buffer-size-exceeded") tooLarge = "upstream sent an event over 10 MiB"
    }
  })

  /** The items one read brings, in one synchronous pass. */
  const feed = (bytes: Uint8Array): Array<A> => {
    parser.feed(decoder.decode(bytes, { stream: true }))
    const out: Array<A> = []
    try {
      for (const event of events) {
        const translation = translate(event)
        for (const item of translation.out) out.push(item)
        if (translation.done) {
          done = true
          body.complete()
          break
        }
      }
    } catch (error) {
      broken = protocolFailureOf(error)
    } finally {
      events = []
    }
    if (tooLarge !== undefined && !done) broken ??= protocolFailure(tooLarge)
    return out
  }

  /** How the stream ends once nothing more comes: complete, or failed. */
  const end = Effect.suspend(() =>
    Effect.fail(
      broken !== undefined
        ? Option.some(broken)
        : done || !options.endMarker
        ? Option.none()
        : Option.some(protocolFailure("upstream stream ended before its end"))
    )
  )

  const pull: Effect.Effect<Chunk.Chunk<A>, Option.Option<UpstreamFailure>> = Effect.suspend(() => {
    if (over || broken !== undefined) return end
    // Complete: what is left of the body is drained when it is released (answerReading.ts), not read here.
    if (done) {
      over = true
      return end
    }
    return Effect.matchEffect(body.read, {
      onFailure: (failure) => Effect.fail(Option.some(failure)),
      onSuccess: (bytes) => {
        if (bytes === undefined) {
          over = true
          return end
        }
        // A read that broke still delivers the items before the break; the next pull raises it.
        return Effect.succeed(Chunk.unsafeFromArray(feed(bytes)))
      }
    })
  })

  // Released however the stream ends: a body abandoned mid-way frees its connection at once.
  return pulledStream(pull, Effect.sync(body.release))
}
