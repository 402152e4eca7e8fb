/**
 * Fresh scopes for the chat lane's calls, made ahead in batches: a call's
 * scope is then in its fiber's context from the fiber's first step, with no
 * `Scope.make` step of the call's own and no copy of the fiber's refs to set
 * its context (docs/performance.md, item 99). Effect has no public way to
 * make a scope without running an effect, so one run makes a batch. A scope
 * made and not yet used holds nothing: it is an empty, open scope.
 */
import { Effect, Scope } from "effect"

const BATCH = 64

/** Hands out a fresh scope per call, making the next batch in one run when the last is used up. */
export const freshScopes = (): () => Scope.CloseableScope => {
  let ready: Array<Scope.CloseableScope> = []
  const batch = Effect.all(Array.from({ length: BATCH }, () => Scope.make()))
  return () => {
    if (ready.length === 0) ready = Effect.runSync(batch)
    return ready.pop()!
  }
}
