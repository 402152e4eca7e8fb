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
 */
import type { Readable } from "node:stream"
import { createParser } from "eventsource-parser"
import { Deferred, Effect, Option, Stream } from "effect"
import type { UpstreamFailure } from "../../services/Providers.ts"
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

/**
 * The response body as a stream. Releasing destroys the body at once:
 * `fromAsyncIterable` would await `return()`, which queues behind a pending read.
 */
const bodyBytes = (body: Readable): Stream.Stream<Uint8Array, UpstreamFailure> =>
  Stream.unwrapScoped(Effect.map(
    Effect.acquireRelease(Effect.sync(() => body[Symbol.asyncIterator]()), () => Effect.sync(() => body.destroy())),
    (iterator) =>
      Stream.repeatEffectOption(
        Effect.tryPromise({ try: () => iterator.next(), catch: (error) => Option.some(failureOf(error)) }).pipe(
          Effect.flatMap((next) => (next.done ? Effect.fail(Option.none()) : Effect.succeed(next.value as Uint8Array)))
        )
      )
  ))

/** How long to let the response end after the upstream said it is complete. */
const drainAfterDone = "250 millis"

export const sseStream = <A>(
  body: Readable,
  /** Called per event, in order; a fresh closure per stream may keep state. */
  translate: (event: SseEvent) => Translation<A>,
  options: {
    /** Without an explicit end (Gemini), the body's end completes the stream. */
    readonly endMarker: boolean
  }
): Stream.Stream<A, UpstreamFailure> =>
  Stream.unwrap(Effect.map(Deferred.make<void>(), (sawDone) => {
    const decoder = new TextDecoder()
    let events: Array<SseEvent> = []
    let done = false
    let tooLarge: string | undefined
    const parser = createParser({
      maxBufferSize: MAX_EVENT_CHARS,
      onEvent: (event) => void events.push({ event: event.event ?? "message", data: event.data, id: event.id }),
      onError: (error) => {
        if (error.type === "max-buffer-size-exceeded") tooLarge = "upstream sent an event over 10 MiB"
      }
    })
    /** A failure met while translating one read: raised after the items translated before it. */
    let broken: UpstreamFailure | undefined
    const feed = (bytes: Uint8Array): Effect.Effect<Array<A>> => {
      if (done) return Effect.succeed([])
      parser.feed(decoder.decode(bytes, { stream: true }))
      const out: Array<A> = []
      try {
        for (const event of events) {
          const translation = translate(event)
          out.push(...translation.out)
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
      return done ? Effect.as(Deferred.succeed(sawDone, undefined), out) : Effect.succeed(out)
    }
    const ended = Stream.suspend(() =>
      broken !== undefined
        ? Stream.fail(broken)
        : done || !options.endMarker
        ? Stream.empty
        : Stream.fail(protocolFailure("upstream stream ended before its end"))
    )
    return bodyBytes(body).pipe(
      Stream.interruptWhen(Effect.zipRight(Deferred.await(sawDone), Effect.sleep(drainAfterDone))),
      Stream.catchAll((failure) => (done ? Stream.empty : Stream.fail(failure))),
      Stream.mapEffect(feed),
      // A read that broke is the last: its good items go out, then `ended` raises the failure.
      Stream.takeUntil(() => broken !== undefined),
      Stream.mapConcat((out) => out),
      Stream.concat(ended)
    )
  }))
