/**
 * Chat completions end to end: route (models, privacy class, deployments),
 * reserve the estimate, call with failover, settle the bill, and hand back a
 * response that names only the catalogue model and says which privacy class
 * served it.
 */
import { Context, type Effect, type Scope, type Stream } from "effect"
import type { AdmissionRefusal } from "./Admission.ts"
import type { InsufficientFunds, RefusedByModel, UpstreamTimeout } from "./ApiError.ts"
import type { Principal } from "./ApiKeys.ts"
import type { ChatChunk, ChatCompletion, ChatRequest } from "./Chat.ts"
import type { Settlement } from "./Billing.ts"
import type { PlanError } from "./RoutePlanner.ts"

/** What a chat call can fail with. */
export type ChatError = PlanError | AdmissionRefusal | InsufficientFunds | RefusedByModel | UpstreamTimeout

export interface StreamedChat {
  /** Reserved before the call; the receipt exists once the stream has ended. */
  readonly receiptId: string
  /** Settles the bill when it ends, however it ends (done, failed, or the client left). */
  readonly chunks: Stream.Stream<ChatChunk, ChatError>
}

export class ChatGateway extends Context.Tag("svc/ChatGateway")<ChatGateway, {
  /**
   * A whole completion. What the call holds until it is answered (its admission's concurrency
   * permit) is released when the caller's scope closes: one call per scope, as a request has
   * (a scope of its own would cost each call a context change, ~10 µs: docs/performance.md).
   */
  readonly complete: (
    request: ChatRequest,
    principal: Principal
  ) => Effect.Effect<{ readonly completion: ChatCompletion; readonly receipt: Settlement }, ChatError, Scope.Scope>
  /**
   * Succeeds once an upstream has accepted the call, so refusals are still
   * HTTP errors; failures inside the stream come after the first byte.
   */
  readonly stream: (request: ChatRequest, principal: Principal) => Effect.Effect<StreamedChat, ChatError, Scope.Scope>
}>() {}
