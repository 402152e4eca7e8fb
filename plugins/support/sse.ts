/**
 * An upstream's SSE body as a stream of translated items. Frames are parsed
 * with `eventsource-parser` (it finds line ends with `indexOf`; the parser of
 * `@effect/experimental` went character by character, a fifth of a streamed
 * call's CPU, docs/performance.md); each adapter supplies the
 * translation of one event (throwing `Malformed` for what it cannot use) and
 * says when the stream is complete. A body that ends before that is a
 * `protocol` failure (the answer was cut off); once complete, the rest of the
 * body is read for a moment rather than destroyed, so its connection stays
 * reusable.
 *
 * The stream is one pull per read of the body: the read's bytes parsed and
 * translated in one synchronous pass, its items one chunk. Composing it from
 * Effect's stream stages (read, interrupt-when-done, map, take-until, concat)
 * cost four times the whole JSON exchange per stream (docs/performance.md).
 */
import type { Readable } from "node:stream"
import { createParser } from "eventsource-parser"
import { Chunk, Effect, Option, type Stream } from "effect"
import type { UpstreamFailure } from "../../services/Providers.ts"
import { pulledStream } from "../../services/pulledStream.ts"
import { protocolFailure, protocolFailureOf } from "./json.ts"
import { failureOf } from "./upstreamHttp.ts"

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

/** How long to let the response end after the upstream said it is complete. */
const DRAIN_AFTER_DONE_MS = 250

/**
 * The rest of a body whose answer is complete, read until it ends or for `DRAIN_AFTER_DONE_MS`,
 * whichever comes first; never fails (what is left is destroyed with the body).
 */
const drainRest = (iterator: AsyncIterator<unknown>) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, DRAIN_AFTER_DONE_MS)
    const done = () => {
      clearTimeout(timer)
      resolve()
    }
    const next = (): void => void iterator.next().then((read) => (read.done ? done() : next()), done)
    next()
  })

export const sseStream = <A>(
  body: Readable,
  /** Called per event, in order; a fresh closure per stream may keep state. */
  translate: (event: SseEvent) => Translation<A>,
  options: {
    /** Without an explicit end (Gemini), the body's end completes the stream. */
    readonly endMarker: boolean
  }
): Stream.Stream<A, UpstreamFailure> => {
  // Made at once, not per run: a body is read once, and the watchdog takes the pull itself (pulledStream.ts).
  const iterator = body[Symbol.asyncIterator]()
  const decoder = new TextDecoder()
  let events: Array<SseEvent> = []
  /** The upstream said the answer is complete. */
  let done = false
  /** Nothing more comes: the body ended, or was drained after `done`. */
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
    if (done) {
      over = true
      return Effect.zipRight(Effect.promise(() => drainRest(iterator)), end)
    }
    return Effect.tryPromise({ try: () => iterator.next(), catch: (error) => Option.some(failureOf(error)) }).pipe(
      Effect.flatMap((read) => {
        if (read.done) {
          over = true
          return end
        }
        // A read that broke still delivers the items before the break; the next pull raises it.
        return Effect.succeed(Chunk.unsafeFromArray(feed(read.value as Uint8Array)))
      })
    )
  })

  // Destroyed however the stream ends: a body abandoned mid-way frees its connection at once.
  return pulledStream(pull, Effect.sync(() => body.destroy()))
}
