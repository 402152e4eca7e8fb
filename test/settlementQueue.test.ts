/**
 * The queue of settlements answered before they are written
 * (layers/billing/settlementQueue.ts): a read waits for every settlement
 * queued before it and for none queued after, and never longer than its
 * bound; what runs after a settlement runs once the ledger answers it, in
 * the runtime the queue was made with.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, HashMap, Option } from "effect"
import { makeSettlementQueue } from "../layers/billing/settlementQueue.ts"
import type { Receipt } from "../services/Ledger.ts"

const answer = Exit.succeed({ id: "rcpt_x" } as Receipt)

/** Fails unless `effect` ends well before its own bound: resumed by the settlements, not by the timer. */
const promptly = <A>(effect: Effect.Effect<A>) =>
  Effect.timeoutFail(effect, { duration: "2 seconds", onTimeout: () => new Error("the read was not resumed") })

describe("settlement queue", () => {
  it.live("a read waits for the settlements queued before it, not for those queued after", () =>
    Effect.gen(function*() {
      const queue = makeSettlementQueue(yield* Effect.runtime<never>())
      const after: Array<string> = []
      const first = queue.track(() => Effect.sync(() => void after.push("first")))
      const second = queue.track(() => Effect.sync(() => void after.push("second")))
      const read = yield* Effect.fork(queue.settledWithin(10_000))
      yield* Effect.yieldNow() // the read starts waiting before the third is queued
      const third = queue.track(() => Effect.sync(() => void after.push("third")))
      second(answer)
      yield* Effect.sleep("20 millis")
      expect(after).toEqual(["second"])
      expect(read.unsafePoll()).toBeNull()
      first(answer)
      yield* promptly(Fiber.join(read))
      expect(after).toEqual(["second", "first"])
      third(Exit.die("the ledger failed"))
      yield* promptly(queue.settledWithin(10_000))
      expect(after).toEqual(["second", "first", "third"])
    }))

  it.live("what runs after a settlement runs in the queue's runtime (here, one with a log annotation)", () =>
    Effect.gen(function*() {
      const queue = makeSettlementQueue(yield* Effect.annotateLogs(Effect.runtime<never>(), "layer", "billing"))
      let annotation: Option.Option<unknown> = Option.none()
      const callback = queue.track(() =>
        Effect.map(Effect.logAnnotations, (annotations) => void (annotation = HashMap.get(annotations, "layer")))
      )
      callback(answer)
      yield* promptly(queue.settledWithin(10_000))
      expect(annotation).toEqual(Option.some("billing"))
    }))

  it.live("a read with nothing queued does not wait; one whose settlement never comes waits its bound", () =>
    Effect.gen(function*() {
      const queue = makeSettlementQueue(yield* Effect.runtime<never>())
      yield* queue.settledWithin(60_000)
      queue.track(() => Effect.void)
      const started = Date.now()
      yield* queue.settledWithin(50)
      expect(Date.now() - started).toBeGreaterThanOrEqual(45)
    }))
})
