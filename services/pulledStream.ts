/**
 * A stream that can hand over the pull it was made from. Making a stream
 * from a pull and turning it back into a pull (`Stream.toPull`) costs a
 * channel and a conversion per read (docs/performance.md); a consumer that
 * wants a pull anyway (the stream watchdog, layers/upstream/openStream.ts)
 * takes the original through `pullOf`, and any other consumer reads the
 * stream as usual. A stream piped through an operator is a new stream
 * without the pull, and `pullOf` falls back to `Stream.toPull`.
 */
import { type Chunk, Effect, type Option, type Scope, Stream } from "effect"

const PULL = Symbol.for("svc/pulledStream/pull")

/** Reads the next chunk; fails with `None` at the end. */
export type Pull<A, E> = Effect.Effect<Chunk.Chunk<A>, Option.Option<E>>

interface Origin<A, E> {
  readonly pull: Pull<A, E>
  /** Run once however the stream ends (frees what the pull reads from). */
  readonly release: Effect.Effect<void>
}

/** The stream of `pull`'s chunks, `release` run when it ends, that `pullOf` can take apart again. */
export const pulledStream = <A, E>(pull: Pull<A, E>, release: Effect.Effect<void>): Stream.Stream<A, E> => {
  const stream = Stream.repeatEffectChunkOption(pull).pipe(Stream.ensuring(release))
  return Object.assign(stream, { [PULL]: { pull, release } satisfies Origin<A, E> })
}

/** The stream's pull for as long as the scope lives (`release` runs when it closes). */
export const pullOf = <A, E>(stream: Stream.Stream<A, E>): Effect.Effect<Pull<A, E>, never, Scope.Scope> => {
  const origin = (stream as { readonly [PULL]?: Origin<A, E> })[PULL]
  if (origin === undefined) return Stream.toPull(stream)
  return Effect.as(Effect.addFinalizer(() => origin.release), origin.pull)
}
