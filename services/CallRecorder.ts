/**
 * What is recorded of a call when it ends: its routing and privacy events
 * (`provider.route`, `provider.fallback`, `privacy.*`), written with the
 * receipt when there is one, on their own when there is not. Monitoring's
 * request records hook in here too.
 */
import { Context, type Effect } from "effect"
import type { PrivacyClassUnavailable, RuntimeUnavailable } from "./ApiError.ts"
import type { Principal } from "./ApiKeys.ts"
import type { CallEvent } from "./Ledger.ts"
import type { Route } from "./RoutePlanner.ts"
import type { AttemptLog } from "./Upstream.ts"

export class CallRecorder extends Context.Tag("svc/CallRecorder")<CallRecorder, {
  /** Events of a call that settles: written with its receipt, in the same statement. */
  readonly receiptEvents: (route: Route, attempts: ReadonlyArray<AttemptLog>) => ReadonlyArray<CallEvent>
  /** A call its privacy policy refused (`privacy.rejected`); nothing was held or sent. */
  readonly rejected: (
    principal: Principal,
    model: string,
    refusal: PrivacyClassUnavailable | RuntimeUnavailable
  ) => Effect.Effect<void>
  /** A call on which every route failed: its routing events, with no receipt. */
  readonly routesFailed: (principal: Principal, route: Route, attempts: ReadonlyArray<AttemptLog>) => Effect.Effect<void>
}>() {}
