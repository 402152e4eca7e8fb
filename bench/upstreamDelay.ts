/**
 * Calls the bench's upstream answers after a delay, as a real model does,
 * picked out by the request's `user` field: the gateway and the bare proxy
 * both pass it through untouched, so the same warm servers time both kinds of
 * call. At one connection such a call's code runs cold (the process sleeps
 * through the upstream's wait), which is what a production install meets
 * (docs/performance.md, "After session 38").
 */

/** The `user` of a call the bench's upstream answers after `UPSTREAM_DELAY_MS`. */
export const DELAYED_CALLER = "bench-delayed-upstream"
export const UPSTREAM_DELAY_MS = 2

/** How long the bench's upstream waits before answering `body`: `otherwise` unless it is a delayed call. */
export const upstreamDelayOf = (otherwise: number) => (body: Record<string, unknown>) =>
  body.user === DELAYED_CALLER ? UPSTREAM_DELAY_MS : otherwise
