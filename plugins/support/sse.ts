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
import { type AttemptDeadline, timedOut, type UpstreamFailure } from "../../services/Providers.ts"
import { type Pull as PullOf, pulledStream } from "../../services/pulledStream.ts"
import { protocolFailure, protocolFailureOf } from "./json.ts"
import type { ReadLimit, UpstreamBody } from "./streamedAnswer.ts"

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
    /** The attempt's deadline, kept here (the adapter keeps it): each pull's wait for content is timed. */
    readonly deadline?: AttemptDeadline | undefined
  }
): Stream.Stream<A, UpstreamFailure> => {
  type Pull = PullOf<A, UpstreamFailure>
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
  const end: Pull = Effect.suspend(() =>
    Effect.fail(
      broken !== undefined
        ? Option.some(broken)
        : done || !options.endMarker
        ? Option.none()
        : Option.some(protocolFailure("upstream stream ended before its end"))
    )
  )

  const { deadline } = options
  /** Content came: from now on each wait is within the idle limit too (the wait for the first has only the attempt's end). */
  let answered = false
  /** How long a pull that started at `since` may wait for content. */
  const limitFrom = (since: number, { endAt, streamIdleMs }: AttemptDeadline): ReadLimit =>
    answered && since + streamIdleMs < endAt
      ? { at: since + streamIdleMs, expired: () => timedOut("the stream went idle", streamIdleMs) }
      : { at: endAt, expired: () => timedOut("the attempt ran out of time", endAt - since) }

  /** Reads until a read brings items, or the body ends or fails: keep-alives and frames that make no item are not content. */
  const readContent = (limit: ReadLimit | undefined): Pull => Effect.matchEffect(body.read(limit), {
    onFailure: (failure) => Effect.fail(Option.some(failure)),
    onSuccess: (bytes): Pull => {
      if (bytes === undefined) {
        over = true
        return end
      }
      const items = feed(bytes)
      if (items.length > 0) {
        answered = true
        // A read that broke still delivers the items before the break; the next pull raises it.
        return Effect.succeed(Chunk.unsafeFromArray(items))
      }
      if (done) over = true
      return done || broken !== undefined ? end : readContent(limit)
    }
  })

  const pull: Pull = Effect.suspend(() => {
    if (over || broken !== undefined) return end
    // Complete: what is left of the body is drained when it is released (streamedAnswer.ts), not read here.
    if (done) {
      over = true
      return end
    }
    if (deadline === undefined) return readContent(undefined)
    const since = body.now()
    if (since >= deadline.endAt) return Effect.fail(Option.some(timedOut("the attempt ran out of time", 0)))
    return readContent(limitFrom(since, deadline))
  })

  // Released however the stream ends: a body abandoned mid-way frees its connection at once.
  return pulledStream(pull, Effect.sync(body.release))
}
