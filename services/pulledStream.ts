/**
 * Streams that carry the pull they were made from. Making a stream from a
 * pull, running it, and turning it back into a pull (`Stream.toPull`) costs a
 * channel and a conversion per read at every stage (docs/performance.md). A
 * streamed answer goes pull to pull instead: the SSE body's pull, the stream
 * watchdog, the relay, the settlement and the SSE frames are each a function
 * of the pull before (`throughPull`), and the chat lane writes by looping
 * over the last one (`forEachChunk`). Each result is still a `Stream` for
 * any other reader, which reads it as usual; a stream piped through an
 * operator carries no pull, and the next stage takes it apart with
 * `Stream.toPull` (once, in a scope of its own closed when it is released).
 */
import { type Chunk, Effect, Exit, Option, Scope, Stream } from "effect"

const ORIGIN = Symbol.for("svc/pulledStream/origin")

/** Reads the next chunk; fails with `None` at the end. */
export type Pull<A, E> = Effect.Effect<Chunk.Chunk<A>, Option.Option<E>>

export interface Origin<A, E> {
  readonly pull: Pull<A, E>
  /** Run however reading ends (frees what the pull reads from); running it again does nothing. */
  readonly release: Effect.Effect<void>
}

/** The stream of `pull`'s chunks, `release` run when it ends, that carries both. */
export const pulledStream = <A, E>(pull: Pull<A, E>, release: Effect.Effect<void> = Effect.void): Stream.Stream<A, E> => {
  const stream = Stream.repeatEffectChunkOption(pull).pipe(Stream.ensuring(release))
  return Object.assign(stream, { [ORIGIN]: { pull, release } satisfies Origin<A, E> })
}

/** A stream without a pull of its own, taken apart on its first pull in a scope its release closes. */
const originOfPlain = <A, E>(stream: Stream.Stream<A, E>): Origin<A, E> => {
  let scope: Scope.CloseableScope | undefined
  let pull: Pull<A, E> | undefined
  const open = Effect.flatMap(Scope.make(), (made) => {
    scope = made
    return Effect.map(Scope.extend(Stream.toPull(stream), made), (opened) => (pull = opened))
  })
  return {
    pull: Effect.suspend(() => pull ?? Effect.flatMap(open, (opened) => opened)),
    release: Effect.suspend(() => (scope === undefined ? Effect.void : Scope.close(scope, Exit.void)))
  }
}

/** The stream's pull and release, for a reader that releases it itself. */
export const originOf = <A, E>(stream: Stream.Stream<A, E>): Origin<A, E> =>
  (stream as { readonly [ORIGIN]?: Origin<A, E> })[ORIGIN] ?? originOfPlain(stream)

/**
 * The stream's pull for as long as the scope lives (its release runs when the scope closes). The
 * release goes on the scope as it is: `Effect.addFinalizer` would restore this fiber's refs around
 * it, diffing them and the whole service context twice, which a release that frees a request
 * does not need (docs/performance.md).
 */
export const pullOf = <A, E>(stream: Stream.Stream<A, E>): Effect.Effect<Pull<A, E>, never, Scope.Scope> => {
  const origin = originOf(stream)
  return Effect.flatMap(Effect.scope, (scope) => Effect.as(Scope.addFinalizer(scope, origin.release), origin.pull))
}

/** A stage over `stream`'s pull (the stream's release is the source's). */
export const throughPull = <A, E, B, E2>(
  stream: Stream.Stream<A, E>,
  stage: (pull: Pull<A, E>) => Pull<B, E2>
): Stream.Stream<B, E2> => {
  const origin = originOf(stream)
  return pulledStream(stage(origin.pull), origin.release)
}

/**
 * The stream, then `release` once, as `Stream.ensuring` would: when its pull ends or fails (before
 * whatever the next stage makes of that end — a closing frame is sent after it), or else when the
 * stream is released (a reader that stopped early, an interruption).
 */
export const ensuringPulled = <A, E>(stream: Stream.Stream<A, E>, release: Effect.Effect<void>): Stream.Stream<A, E> => {
  const origin = originOf(stream)
  let released = false
  const once = Effect.suspend(() => {
    if (released) return Effect.void
    released = true
    return release
  })
  return pulledStream(Effect.tapError(origin.pull, () => once), Effect.ensuring(origin.release, once))
}

/** Reads the stream to its end, `f` on every chunk, in a plain loop over its pull; then releases it. */
export const forEachChunk = <A, E>(
  stream: Stream.Stream<A, E>,
  f: (chunk: Chunk.Chunk<A>) => Effect.Effect<void>
): Effect.Effect<void, E> => {
  const origin = originOf(stream)
  const loop: Effect.Effect<void, Option.Option<E>> = Effect.flatMap(origin.pull, (chunk) => Effect.zipRight(f(chunk), loop))
  return loop.pipe(
    Effect.catchAll((end) => (Option.isNone(end) ? Effect.void : Effect.fail(end.value))),
    Effect.ensuring(origin.release)
  )
}
