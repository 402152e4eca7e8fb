/**
 * A stream that hands over its pull (services/pulledStream.ts): `pullOf`
 * gives back the very pull it was made from, whose release runs once when
 * the scope closes; read as a stream it reads the same chunks and releases
 * once; a stream piped through an operator has no pull of its own and is
 * turned into one the usual way. `ensuringPulled` runs its effect once, when
 * the pull ends — before the next stage makes anything of the end — or when
 * a reader that stopped early releases the stream.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Option, Stream } from "effect"
import { ensuringPulled, forEachChunk, pullOf, pulledStream, throughPull } from "../services/pulledStream.ts"

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

  it.effect("ensuringPulled runs its effect when the pull ends, before the next stage's closing chunk, and once", () =>
    Effect.gen(function*() {
      const source = counting(2)
      const log: Array<string> = []
      const settled = ensuringPulled(pulledStream(source.pull, source.release), Effect.sync(() => void log.push("settled")))
      // A next stage that adds a closing chunk at the end, as the SSE framing adds [DONE].
      const framed = throughPull(settled, (pull) => {
        let over = false
        return Effect.suspend(() =>
          over ? Effect.fail(Option.none()) : Effect.catchAll(pull, (end) => {
            over = true
            return Option.isNone(end) ? Effect.sync(() => (log.push("closing"), Chunk.of(0))) : Effect.fail(end)
          })
        )
      })
      yield* forEachChunk(framed, (chunk) => Effect.sync(() => void log.push(`chunk ${Chunk.toArray(chunk).join(",")}`)))
      expect(log).toEqual(["chunk 1", "chunk 2", "settled", "closing", "chunk 0"])
      expect(source.released.times).toBe(1)
    }))

  it.effect("ensuringPulled runs its effect once when a reader stops before the end", () =>
    Effect.gen(function*() {
      const source = counting(5)
      let settled = 0
      const stream = ensuringPulled(pulledStream(source.pull, source.release), Effect.sync(() => void settled++))
      expect(Chunk.toArray(yield* Stream.runCollect(Stream.take(stream, 2)))).toEqual([1, 2])
      expect(settled).toBe(1)
      expect(source.released.times).toBe(1)
    }))
})
