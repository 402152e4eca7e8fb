/**
 * The refs a chat lane call's fiber starts with: the lane runtime's, forked
 * once when the lane is made, and the call's own. `Runtime.runFork` forks
 * every ref of its runtime for each new fiber (a patch and an equality check
 * a ref, in a copy of the map) and then sets the ones given one by one, each
 * compared with the value it replaces: the call's context, a fresh `Context`,
 * was hashed for that on every call (docs/performance.md, item 111). Here the
 * fiber is forked from a runtime with no refs, and its refs are one copy of
 * the template with the call's own set. The template's entries carry a fiber
 * id no fiber runs as, an ancestor of every call's: a ref the call sets is
 * pushed above it, as above a parent's entry after a fork.
 */
import { Context, FiberId, FiberRef, FiberRefs, Runtime, type RuntimeFlags, type Scheduler } from "effect"

type Stack = readonly [readonly [FiberId.Single, unknown], ...Array<readonly [FiberId.Single, unknown]>]

/** A ref of the call's own, with its value. */
export type OwnRef = readonly [FiberRef.FiberRef<any>, unknown]

export const callFiberRefs = (
  from: Runtime.Runtime<never>,
  runtimeFlags: RuntimeFlags.RuntimeFlags,
  scheduler: Scheduler.Scheduler
) => {
  const templateId = FiberId.unsafeMake()
  const forked = FiberRefs.forkAs(from.fiberRefs, templateId)
  const template = new Map<FiberRef.FiberRef<any>, Stack>()
  for (const ref of FiberRefs.fiberRefs(forked)) template.set(ref, [[templateId, FiberRefs.getOrDefault(forked, ref)]])
  template.set(FiberRef.currentScheduler, [[templateId, scheduler]])
  return {
    /** Forks with no refs of its own to copy: `refsOf`, given as `updateRefs`, makes them all. */
    runtime: Runtime.make({ context: Context.empty(), fiberRefs: FiberRefs.empty(), runtimeFlags }),
    /** The template's refs, with `own` set as `fiberId`'s. */
    refsOf: (fiberId: FiberId.Single, own: ReadonlyArray<OwnRef>) => {
      const locals = new Map(template)
      for (const [ref, value] of own) locals.set(ref, [[fiberId, value]])
      return FiberRefs.unsafeMake(locals)
    }
  }
}
