/**
 * One turn of the event loop (`setImmediate`: after pending I/O callbacks).
 * Long synchronous work in slices — a fast stream's frames, a huge JSON
 * answer, the sandbox's vectors — takes one between slices, so other
 * requests' sockets are served meanwhile. (`Effect.yieldNow` is not enough:
 * the fiber scheduler resumes on microtasks, which run before any I/O.)
 */
import { Effect } from "effect"

export const eventLoopTurn: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})
