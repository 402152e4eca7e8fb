/**
 * Fairness of a stream's frame loop, asserted by structure rather than time:
 * relaying an upstream whose chunks are always ready at once (a fast
 * upstream's buffered bytes), the relay gives the event loop a turn between
 * batches, so a callback queued behind pending I/O runs after a handful of
 * frames, not after thousands. (The effect on latency is measured by
 * `npm run bench`: a plain call's p50 while 10 fast streams run.)
 */
import { Chunk, Effect, Fiber, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { FRAMES_PER_TURN, StreamRelay } from "../layers/gateway/streamRelay.ts"
import type { ChatChunk } from "../services/Chat.ts"
import type { PrivacyBlock } from "../services/Privacy.ts"

const chunk: ChatChunk = {
  id: "chatcmpl-up",
  object: "chat.completion.chunk",
  created: 1,
  model: "up",
  choices: [{ index: 0, delta: { content: "word " }, finish_reason: null }]
}

const relayOf = () =>
  new StreamRelay({
    id: "chatcmpl-ours",
    model: "svc/m",
    privacy: { class: "standard_route" } as PrivacyBlock,
    wantsUsage: false,
    keepsText: false,
    told: (usage) => usage
  })

/** Frames relayed before a `setImmediate` queued now gets to run, while an always-ready upstream streams. */
const framesBeforeOtherWork = async () => {
  const endless = Stream.repeatEffectChunk(Effect.succeed(Chunk.of(chunk)))
  let frames = 0
  const fiber = Effect.runFork(
    relayOf().relay(endless, () => Effect.never).pipe(Stream.runForEach(() => Effect.sync(() => void frames++)))
  )
  const seen = await new Promise<number>((resolve) => setImmediate(() => resolve(frames)))
  await Effect.runPromise(Fiber.interrupt(fiber))
  return seen
}

describe("stream fairness", () => {
  it("lets other work run between the batches of a stream whose upstream is always ready", async () => {
    expect(await framesBeforeOtherWork()).toBeLessThan(10)
    // And again, while the stream has long been running.
    const endless = Stream.repeatEffectChunk(Effect.succeed(Chunk.of(chunk)))
    let frames = 0
    const fiber = Effect.runFork(
      relayOf().relay(endless, () => Effect.never).pipe(Stream.runForEach(() => Effect.sync(() => void frames++)))
    )
    const turns: Array<number> = []
    for (let i = 0; i < 20; i++) turns.push(await new Promise<number>((resolve) => setImmediate(() => resolve(frames))))
    await Effect.runPromise(Fiber.interrupt(fiber))
    const perTurn = turns.slice(1).map((n, i) => n - turns[i]!)
    expect(Math.max(...perTurn)).toBeLessThan(10)
    expect(turns.at(-1)).toBeGreaterThan(0)
  })

  it("sends a stream's first slice before any turn, and gives the turn before the next", async () => {
    const big = Chunk.unsafeFromArray(Array.from({ length: 100 }, () => chunk))
    let frames = 0
    const fiber = Effect.runFork(
      relayOf().relay(Stream.fromChunk(big), () => Effect.never).pipe(Stream.runForEach(() => Effect.sync(() => void frames++)))
    )
    // Queued as the stream starts: it runs at the relay's first turn.
    const beforeFirstTurn = await new Promise<number>((resolve) => setImmediate(() => resolve(frames)))
    await Effect.runPromise(Fiber.await(fiber))
    expect(beforeFirstTurn).toBe(FRAMES_PER_TURN)
  })

  it("splits a big read (hundreds of frames at once) into slices, each its own turn and its own write", async () => {
    const big = Chunk.unsafeFromArray(Array.from({ length: 100 }, () => chunk))
    const sizes = await Effect.runPromise(
      relayOf().relay(Stream.fromChunk(big), () => Effect.never).pipe(
        Stream.chunks,
        Stream.map((slice) => slice.length),
        Stream.runCollect
      )
    )
    const frames = Chunk.toReadonlyArray(sizes)
    expect(frames.reduce((n, size) => n + size, 0)).toBe(101) // and the closing chunk with the privacy block
    expect(Math.max(...frames)).toBeLessThanOrEqual(FRAMES_PER_TURN)
  })

  it("still relays every frame, relabelled, in order", async () => {
    const frames = await Effect.runPromise(
      relayOf().relay(Stream.make(chunk, chunk, { ...chunk, choices: [{ ...chunk.choices[0]!, finish_reason: "stop" as const }] }), () =>
        Effect.never).pipe(Stream.runCollect)
    )
    expect(Chunk.toReadonlyArray(frames).map((frame) => [frame.id, frame.model, frame.privacy !== undefined])).toEqual([
      ["chatcmpl-ours", "svc/m", false],
      ["chatcmpl-ours", "svc/m", false],
      ["chatcmpl-ours", "svc/m", true]
    ])
  })
})
