/**
 * Chat completions end to end: resolve the model, pick a deployment, call its
 * adapter, and hand back a response that names only the catalogue model.
 */
import { Context, type Effect, type Scope, type Stream } from "effect"
import type { InvalidRequest, UpstreamError, UpstreamTimeout } from "./ApiError.ts"
import type { Principal } from "./ApiKeys.ts"
import type { ChatChunk, ChatCompletion, ChatRequest } from "./Chat.ts"

/** What a chat call can fail with. */
export type ChatError = InvalidRequest | UpstreamError | UpstreamTimeout

export class ChatGateway extends Context.Tag("svc/ChatGateway")<ChatGateway, {
  readonly complete: (request: ChatRequest, principal: Principal) => Effect.Effect<ChatCompletion, ChatError>
  /**
   * Succeeds once an upstream has accepted the call, so refusals are still
   * HTTP errors; failures inside the stream come after the first byte.
   */
  readonly stream: (
    request: ChatRequest,
    principal: Principal
  ) => Effect.Effect<Stream.Stream<ChatChunk, ChatError>, ChatError, Scope.Scope>
}>() {}
