/**
 * A stream that hands over its pull (services/pulledStream.ts): `pullOf`
 * gives back the very pull it was made from, whose release runs once when
 * the scope closes; read as a stream it reads the same chunks and releases
 * once; a stream piped through an operator has no pull of its own and is
 * turned into one the usual way.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Option, Stream } from "effect"
import { pullOf, pulledStream } from "../services/pulledStream.ts"

/** Pulls of one number each, 1 to `count`, and a count of releases. */
const counting = (count: number) => {
  let next = 1
  const released = { times: 0 }
  const pull = Effect.suspend(() => next > count ? Effect.fail(Option.none()) : Effect.succeed(Chunk.of(next++)))
  return { pull, released, release: Effect.sync(() => void released.times++) }
}

const drain = <A, E>(pull: Effect.Effect<Chunk.Chunk<A>, Option.Option<E>>) =>
  Effect.gen(function*() {
    const out: Array<A> = []
    while (true) {
      const chunk = yield* Effect.option(pull)
      if (Option.isNone(chunk)) return out
      out.push(...chunk.value)
    }
  })

describe("pulledStream", () => {
  it.effect("pullOf hands over the original pull; its release runs once, when the scope closes", () =>
    Effect.gen(function*() {
      const source = counting(3)
      const stream = pulledStream(source.pull, source.release)
      const read = yield* Effect.scoped(Effect.gen(function*() {
        const pull = yield* pullOf(stream)
        expect(pull).toBe(source.pull)
        const read = yield* drain(pull)
        expect(source.released.times).toBe(0)
        return read
      }))
      expect(read).toEqual([1, 2, 3])
      expect(source.released.times).toBe(1)
    }))

  it.effect("read as a stream, it brings the same chunks and releases once", () =>
    Effect.gen(function*() {
      const source = counting(3)
      expect(Chunk.toArray(yield* Stream.runCollect(pulledStream(source.pull, source.release)))).toEqual([1, 2, 3])
      expect(source.released.times).toBe(1)
    }))

  it.effect("a stream piped through an operator is a stream like any other: its pull comes from Stream.toPull", () =>
    Effect.gen(function*() {
      const source = counting(3)
      const doubled = pulledStream(source.pull, source.release).pipe(Stream.map((n) => n * 2))
      const read = yield* Effect.scoped(Effect.flatMap(pullOf(doubled), (pull) => {
        expect(pull).not.toBe(source.pull)
        return drain(pull)
      }))
      expect(read).toEqual([2, 4, 6])
      expect(source.released.times).toBe(1)
    }))
})
