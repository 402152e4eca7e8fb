/**
 * An upstream's SSE body as a stream of translated items. Frames are parsed
 * with `@effect/experimental`'s SSE parser; each adapter supplies the
 * translation of one event (throwing `Malformed` for what it cannot use) and
 * says when the stream is complete. A body that ends before that is a
 * `protocol` failure (the answer was cut off); once complete, the rest of the
 * body is read for a moment rather than destroyed, so its connection stays
 * reusable.
 */
import * as Sse from "@effect/experimental/Sse"
import type { Readable } from "node:stream"
import { Deferred, Effect, Option, Stream } from "effect"
import type { UpstreamFailure } from "../../services/Providers.ts"
import { protocolFailure, protocolFailureOf } from "./json.ts"
import { failureOf } from "./upstreamHttp.ts"

export type SseEvent = Sse.Event

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
    // The parser, not `Sse.makeChannel`: the channel dies on oversized events and sleeps on `retry:`.
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") events.push(event)
    })
    /** A failure met while translating one read: raised after the items translated before it. */
    let broken: UpstreamFailure | undefined
    const feed = (bytes: Uint8Array): Effect.Effect<Array<A>> => {
      if (done) return Effect.succeed([])
      const tooLarge = parser.feed(decoder.decode(bytes, { stream: true }))
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
      if (tooLarge && !done) broken ??= protocolFailure(tooLarge.message)
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
