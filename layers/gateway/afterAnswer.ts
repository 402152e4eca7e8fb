/**
 * What a call's answer does not wait for (the attempt's health, the
 * settlement's hand-over to the ledger, the rate limits' correction),
 * collected while the call ends and run once the answer is written: as one
 * end of the call (services/callEnds.ts), or one finalizer of the caller's
 * scope, which closes then, even for a caller that left. One for all of
 * them, not one each: a finalizer costs a call a few steps to add and a few
 * more to run (docs/performance.md).
 */
import { type Cause, Effect, type Fiber, type Scope } from "effect"
import { eachAtOnce, thenAtOnce } from "../../services/atOnce.ts"
import type { AfterAnswer } from "../../services/Billing.ts"
import { atCallEnd } from "../../services/callEnds.ts"

const logged = (cause: Cause.Cause<unknown>) => Effect.logError("work after a call's answer failed", cause)

/**
 * `end`, given where to put what its answer does not wait for (run as the caller's scope closes: a
 * call's end) and the fiber it is called in, to end in this step what can end at once.
 */
export const endingBeforeLater = <A, E, R>(
  end: (later: AfterAnswer, fiber: Fiber.RuntimeFiber<unknown, unknown>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R | Scope.Scope> =>
  Effect.withFiberRuntime((fiber) => {
    const works: Array<() => Effect.Effect<void>> = []
    return thenAtOnce(
      atCallEnd(fiber, () => eachAtOnce(works, (work) => work(), logged)),
      () =>
        end((work) => {
          works.push(work)
          return Effect.void
        }, fiber)
    )
  })
