/**
 * The billing stage on its own, over a ledger double that records what it is
 * asked: a hold ends exactly once — settled, or released when its scope
 * closes first (failure, interruption, a stream never pulled) — and the bill
 * it settles carries the customer price, the upstream cost and their margin;
 * while a hold is open its lease is renewed (the heartbeat), and only then;
 * a queued settlement keeps nothing of its call but its bill while it waits.
 */
import { runInNewContext } from "node:vm"
import { setFlagsFromString } from "node:v8"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Deferred, Effect, Exit, Fiber, Layer, Option, Scope, TestClock } from "effect"
import { BillingLive } from "../layers/billing/BillingLive.ts"
import { SettlementJournalMemory } from "../layers/billing/SettlementJournalMemory.ts"
import { PricingLive } from "../layers/billing/PricingLive.ts"
import { IdsLive } from "../layers/platform/IdsLive.ts"
import { InsufficientFunds } from "../services/ApiError.ts"
import { Billing, type ServedCall, type Settlement } from "../services/Billing.ts"
import { Ledger, type Receipt } from "../services/Ledger.ts"
import { recordingLedger, servedCall, testModel, usd } from "./support/pipeline.ts"
import { testConfig } from "./support/testConfig.ts"

const principal = { keyId: "key_1", accountId: "acct_1", scopes: ["chat" as const] }
const served = servedCall({ inputTokens: 1000, outputTokens: 800 })
const { model } = served

/** Leases of 30 s: the heartbeat beats every 10 s. */
const LEASE_SECONDS = 30

const withBilling = <A, E>(ledger: ReturnType<typeof recordingLedger>, run: Effect.Effect<A, E, Billing>) =>
  run.pipe(Effect.provide(BillingLive.pipe(
    Layer.provide(SettlementJournalMemory),
    Layer.provide(Layer.mergeAll(
      ledger.layer,
      IdsLive,
      PricingLive,
      testConfig({ billing: { reservationLeaseSeconds: LEASE_SECONDS } })
    ))
  )))

/** `withHold` settled, then failed, then interrupted: one settlement, two releases. */
const WITH_HOLD_ENDS = ["reserve rcpt_1", "settle rcpt_1", "reserve rcpt_2", "release rcpt_2", "reserve rcpt_3", "release rcpt_3"]

describe("billing stage", () => {
  it.effect("a settled hold is charged once and not released when its scope closes", () => {
    const ledger = recordingLedger()
    return withBilling(
      ledger,
      Effect.gen(function*() {
        const billing = yield* Billing
        const receipt = yield* Effect.scoped(
          Effect.flatMap(billing.hold(principal, usd(0.01)), (hold) => billing.settle(hold, served))
        )
        expect(ledger.log).toEqual(["reserve rcpt_1", "settle rcpt_1"])
        // (1000 × $3 + 500 × $6) per million tokens = $0.006 to the customer; (1000 × $1 + 500 × $2) upstream.
        expect(receipt.cost).toEqual({ total: 6_000_000n, upstream: 2_000_000n, margin: 4_000_000n })
        expect(ledger.bills[0]).toMatchObject({ providerId: "p", tier: "third_party", events: [] })
      })
    )
  })

  it.effect("given the fiber it runs in, settles when called: the settlement queued is an Exit, its hand-over left for later", () => {
    const ledger = recordingLedger()
    return withBilling(
      ledger,
      Effect.gen(function*() {
        const billing = yield* Billing
        const works: Array<() => Effect.Effect<void>> = []
        const later = (work: () => Effect.Effect<void>) => {
          works.push(work)
          return Effect.void
        }
        // As the chat lane serves a call: traces off (with them on, the stage is a span, made when it runs).
        const receipt = yield* billing.withHold(principal, usd(0.01), (hold) =>
          Effect.withFiberRuntime<Settlement>((fiber) => {
            const settlement = billing.settle(hold, served, undefined, later, fiber)
            expect(Exit.isExit(settlement)).toBe(true)
            return settlement
          })).pipe(Effect.withTracerEnabled(false))
        expect(receipt.cost.total).toBe(6_000_000n)
        // Charged once the hand-over runs, after the answer; the hold was not released meanwhile.
        expect(ledger.log).toEqual(["reserve rcpt_1"])
        yield* Effect.forEach(works, (work) => work())
        expect(ledger.log).toEqual(["reserve rcpt_1", "settle rcpt_1"])
      })
    )
  })

  it.effect("a usage that cannot be right is billed as the estimate held, with the event; one above the hold in full", () => {
    const ledger = recordingLedger()
    return withBilling(
      ledger,
      Effect.gen(function*() {
        const billing = yield* Billing
        const settle = (usage: ServedCall["usage"]) =>
          billing.withHold(principal, usd(0.01), (hold) => billing.settle(hold, { ...served, usage }))
        const odd = yield* settle({ inputTokens: 1000, outputTokens: -3 })
        // The estimate held: 1000 in, 800 out = (1000 × $3 + 800 × $6) / 1e6.
        expect(odd.usage).toEqual({ inputTokens: 1000, outputTokens: 800 })
        expect(odd.cost.total).toBe(7_800_000n)
        expect(ledger.bills[0]!.events).toEqual([{
          type: "provider.usage_invalid",
          data: {
            model: "svc/m",
            problem: "output tokens are negative",
            reported_input_tokens: "1000",
            reported_output_tokens: "-3",
            billed_input_tokens: 1000,
            billed_output_tokens: 800
          }
        }])
        // Above the estimate but a sane count: billed as reported, in full.
        const over = yield* settle({ inputTokens: 1000, outputTokens: 5000 })
        expect(over.usage).toEqual({ inputTokens: 1000, outputTokens: 5000 })
        expect(over.cost.total).toBe(33_000_000n)
        expect(ledger.bills[1]!.events).toEqual([])
        expect(ledger.log).toEqual(["reserve rcpt_1", "settle rcpt_1", "reserve rcpt_2", "settle rcpt_2"])
      })
    )
  })

  it.effect("a hold whose call failed or was interrupted is released once, and a settle after that is a defect", () => {
    const ledger = recordingLedger()
    return withBilling(
      ledger,
      Effect.gen(function*() {
        const billing = yield* Billing
        const failed = yield* Effect.exit(Effect.scoped(Effect.zipRight(billing.hold(principal, 1n), Effect.fail("upstream"))))
        expect(Exit.isFailure(failed)).toBe(true)
        const fiber = yield* Effect.fork(Effect.scoped(Effect.zipRight(billing.hold(principal, 1n), Effect.never)))
        yield* Effect.yieldNow()
        yield* Fiber.interrupt(fiber)
        expect(ledger.log).toEqual(["reserve rcpt_1", "release rcpt_1", "reserve rcpt_2", "release rcpt_2"])

        const scope = yield* Scope.make()
        const hold = yield* Scope.extend(billing.hold(principal, 1n), scope)
        yield* billing.release(hold)
        yield* billing.release(hold)
        yield* Scope.close(scope, Exit.void)
        expect(ledger.log.filter((line) => line === "release rcpt_3")).toHaveLength(1)
        const late = yield* Effect.exit(billing.settle(hold, served))
        expect(Exit.isFailure(late) && Exit.causeOption(late)._tag === "Some").toBe(true)
        expect(ledger.log).not.toContain("settle rcpt_3")
      })
    )
  })

  it.effect("refuses a hold the balance cannot cover, holding nothing", () => {
    const ledger = recordingLedger(usd(0.001))
    return withBilling(
      ledger,
      Effect.gen(function*() {
        const billing = yield* Billing
        const refused = yield* Effect.flip(Effect.scoped(billing.hold(principal, usd(1))))
        expect(refused._tag).toBe("InsufficientFunds")
        expect(ledger.log).toEqual([])
      })
    )
  })

  it.effect("estimates input plus the requested output, never past the context", () =>
    withBilling(
      recordingLedger(),
      Effect.gen(function*() {
        const billing = yield* Billing
        expect(billing.estimate(model, 1000, 500)).toMatchObject({ inputTokens: 1000, outputTokens: 500, total: 6_000_000n })
        expect(billing.estimate(testModel("svc/tiny", { context: 1200 }), 1000, 500).outputTokens).toBe(200)
      })
    ))

  it.effect("withHold: settled inside `use`, nothing released; failed or interrupted, released once", () => {
    const ledger = recordingLedger()
    return withBilling(
      ledger,
      Effect.gen(function*() {
        const billing = yield* Billing
        yield* billing.withHold(principal, 1n, (hold) => billing.settle(hold, served))
        yield* Effect.exit(billing.withHold(principal, 1n, () => Effect.fail("upstream")))
        const fiber = yield* Effect.fork(billing.withHold(principal, 1n, () => Effect.never))
        yield* Effect.yieldNow()
        yield* Fiber.interrupt(fiber)
        expect(ledger.log).toEqual(WITH_HOLD_ENDS)
      })
    )
  })

  it.effect("withHold on a ledger that answers at once: the same ends, and a release that fails too adds its cause to the call's", () => {
    const ledger = recordingLedger()
    ledger.state.atOnce = true
    const releaseFails = { ...ledger, layer: Layer.succeed(Ledger, { ...ledger.ledger, release: () => Effect.die("release failed") }) }
    return Effect.gen(function*() {
      yield* withBilling(
        ledger,
        Effect.gen(function*() {
          const billing = yield* Billing
          const settled = yield* billing.withHold(principal, 1n, (hold) => billing.settle(hold, served))
          expect(settled.id).toBe("rcpt_1")
          const failed = yield* Effect.exit(billing.withHold(principal, 1n, () => Effect.fail("upstream")))
          expect(failed).toStrictEqual(Exit.fail("upstream"))
          const fiber = yield* Effect.fork(billing.withHold(principal, 1n, () => Effect.never))
          yield* Effect.yieldNow()
          yield* Fiber.interrupt(fiber)
          const refused = yield* Effect.exit(billing.withHold(principal, usd(1000), () => Effect.die("not reached")))
          expect(refused).toStrictEqual(Exit.fail(new InsufficientFunds({ message: "no" })))
          expect(ledger.log).toEqual(WITH_HOLD_ENDS)
        })
      )
      yield* withBilling(
        releaseFails,
        Effect.gen(function*() {
          const billing = yield* Billing
          const exit = yield* Effect.exit(billing.withHold(principal, 1n, () => Effect.fail("upstream")))
          expect(Exit.isFailure(exit) && Cause.failures(exit.cause)).toStrictEqual(Chunk.of("upstream"))
          expect(Exit.isFailure(exit) && Cause.defects(exit.cause)).toStrictEqual(Chunk.of("release failed"))
        })
      )
    })
  })

  it.effect("renews an open hold's lease every third of it, and stops once the hold ends", () => {
    const ledger = recordingLedger()
    return withBilling(
      ledger,
      Effect.gen(function*() {
        const billing = yield* Billing
        const scope = yield* Scope.make()
        const hold = yield* Scope.extend(billing.hold(principal, 1n), scope)
        yield* TestClock.adjust("9 seconds")
        expect(ledger.log).toEqual(["reserve rcpt_1"])
        yield* TestClock.adjust("1 second")
        expect(ledger.log).toEqual(["reserve rcpt_1", "renew rcpt_1"])
        // A call that runs ten leases long keeps its hold.
        yield* TestClock.adjust(`${LEASE_SECONDS * 10} seconds`)
        expect(ledger.log.filter((line) => line === "renew rcpt_1")).toHaveLength(31)
        yield* billing.settle(hold, served)
        yield* Scope.close(scope, Exit.void)
        const beats = ledger.log.length
        yield* TestClock.adjust(`${LEASE_SECONDS * 10} seconds`)
        expect(ledger.log).toHaveLength(beats)
        expect(ledger.log.at(-1)).toBe("settle rcpt_1")

        // withHold beats too, and a released hold stops.
        yield* billing.withHold(principal, 1n, () => TestClock.adjust("25 seconds"))
        yield* TestClock.adjust("60 seconds")
        expect(ledger.log.slice(beats)).toEqual(["reserve rcpt_2", "renew rcpt_2", "renew rcpt_2", "release rcpt_2"])
      })
    )
  })

  it.effect("drained waits for a settlement and for what it records after (the transcript)", () => {
    const ledger = recordingLedger()
    return withBilling(
      ledger,
      Effect.gen(function*() {
        const billing = yield* Billing
        const reached = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const recorded: Array<string> = []
        const recordAfter = (settlement: { readonly id: string }) =>
          Deferred.succeed(reached, undefined).pipe(
            Effect.zipRight(Deferred.await(gate)),
            Effect.zipRight(Effect.sync(() => void recorded.push(settlement.id)))
          )
        const call = yield* Effect.fork(billing.withHold(principal, usd(0.01), (hold) => billing.settle(hold, served, recordAfter)))
        yield* Deferred.await(reached)
        const drained = yield* Effect.fork(billing.drained)
        yield* TestClock.adjust("1 second")
        expect(yield* Fiber.poll(drained)).toEqual(Option.none())
        yield* Deferred.succeed(gate, undefined)
        yield* TestClock.adjust("1 second")
        yield* Fiber.join(drained)
        expect(recorded).toEqual(["rcpt_1"])
        yield* Fiber.join(call)
      })
    )
  })

  it.effect("withHoldDuring: work runs while the hold is taken only once the account was seen with twice the amount and the ledger cannot answer at once; a refused hold interrupts it", () => {
    const ledger = recordingLedger(usd(1))
    return withBilling(
      ledger,
      Effect.gen(function*() {
        const billing = yield* Billing
        const { log, state } = ledger
        const working = (name: string) => Effect.sync(() => void log.push(`work ${name}`))
        const during = (work: Effect.Effect<void>) =>
          billing.withHoldDuring(principal, usd(0.1), work, (hold) => billing.release(hold))
        /** Runs a call whose reservation waits on a gate; answers whether its work ran before the gate opened. */
        const gated = (name: string) =>
          Effect.gen(function*() {
            const gate = yield* Deferred.make<void>()
            state.gate = Deferred.await(gate)
            const call = yield* Effect.fork(during(working(name)))
            for (let i = 0; i < 20 && !log.includes(`work ${name}`); i++) yield* Effect.yieldNow()
            const early = log.includes(`work ${name}`)
            state.gate = undefined
            yield* Deferred.succeed(gate, undefined)
            yield* Fiber.join(call)
            return early
          })

        // Not seen yet: the hold first, then the work.
        expect(yield* gated("a")).toBe(false)
        // Seen with $0.90 left: the work runs while the reservation is still out.
        expect(yield* gated("b")).toBe(true)
        expect(log).toEqual(["reserve rcpt_1", "work a", "release rcpt_1", "work b", "reserve rcpt_2", "release rcpt_2"])

        // Refused (another process spent it meanwhile): 402, and the work in flight is interrupted.
        state.available = 0n
        const started = yield* Deferred.make<void>()
        state.gate = Deferred.await(started)
        const inFlight = Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
        const refused = yield* Effect.exit(during(Effect.onInterrupt(inFlight, () => working("c interrupted"))))
        state.gate = undefined
        expect(refused).toStrictEqual(Exit.fail(new InsufficientFunds({ message: "no" })))
        expect(log.at(-1)).toBe("work c interrupted")

        // After a refusal the hold goes first again, and so it does when what was left is under twice the amount.
        state.available = usd(0.25)
        expect(yield* gated("d")).toBe(false)
        expect(yield* gated("e")).toBe(false)
        state.available = usd(1)
        expect(yield* gated("f")).toBe(false)
        expect(yield* gated("g")).toBe(true)

        // A hold the ledger makes at once (from a credit lease) has nothing to overlap: it goes first.
        state.atOnce = true
        expect(yield* gated("h")).toBe(false)
      })
    )
  })

  it.effect("a queued settlement waiting for the ledger keeps nothing of the call but its bill and hold", () => {
    // The collector, reachable from a test: a call's objects must be freed while its settlement waits.
    setFlagsFromString("--expose-gc")
    const collect = runInNewContext("gc") as () => void
    const recording = recordingLedger()
    // The account's statement is in flight: its answer has not come back.
    const waiting: Array<(answer: Exit.Exit<Receipt>) => void> = []
    const inFlight = Layer.effect(
      Ledger,
      Effect.map(Ledger, (ledger) => ({
        ...ledger,
        settleQueued: (_reservation, _bill, onAnswer) => Effect.sync(() => void waiting.push(onAnswer!))
      }))
    ).pipe(Layer.provide(recording.layer))
    return withBilling(
      { ...recording, layer: inFlight },
      Effect.gen(function*() {
        const billing = yield* Billing
        // Stands for the call's request, route and answer, which the call's work after its answer holds.
        let call: { readonly messages: Array<string> } | undefined = { messages: ["a long prompt"] }
        const freed = new WeakRef(call)
        const settlement = yield* Effect.scoped(Effect.gen(function*() {
          const scope = yield* Effect.scope
          const hold = yield* billing.hold(principal, usd(0.01))
          const held = call
          return yield* billing.settle(hold, served, undefined, (work) =>
            Scope.addFinalizer(scope, Effect.zipRight(Effect.sync(() => held?.messages.length), Effect.suspend(work))))
        }))
        expect(settlement.cost.total).toBe(6_000_000n)
        expect(waiting).toHaveLength(1)
        call = undefined
        // A `WeakRef`'s target is kept until the current job ends.
        yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
        collect()
        expect(freed.deref()).toBeUndefined()
        waiting[0]!(Exit.succeed(settlement as unknown as Receipt))
        yield* billing.drained
      })
    )
  })
})
