/**
 * Admission: the first stage of a call. Who may call what (the key and its
 * scope are checked at the edge; its rate limits here, last), and the
 * request judged beyond its schema: sealed messages opened, the privacy
 * envelope read, the input counted once for everything after.
 */
import { Context, type Effect, type Fiber, type Scope } from "effect"
import type { InvalidRequest, RateLimited, ServiceUnavailable } from "./ApiError.ts"
import type { Principal } from "./ApiKeys.ts"
import type { ChatRequest } from "./Chat.ts"
import type { EmbeddingsRequest } from "./Embeddings.ts"
import type { PrivacyAsk } from "./PrivacyPolicy.ts"
import type { RateLimitTicket } from "./RateLimiter.ts"

/** A chat call let in: everything later stages need to know about who asks and what. */
export interface AdmittedChat {
  readonly principal: Principal
  /** The request with its messages in the clear and no sealed prompt left in it. */
  readonly request: ChatRequest
  readonly privacy: PrivacyAsk
  /** Input tokens by our own count (billed when an upstream reports no usage). */
  readonly inputTokens: number
  /** Its count against the key's rate limits, corrected to the real tokens at settlement (absent: not limited). */
  readonly rateLimit?: RateLimitTicket
}

/** An embeddings call let in: its inputs as a list and each one's tokens. */
export interface AdmittedEmbeddings {
  readonly principal: Principal
  readonly request: EmbeddingsRequest
  readonly inputs: ReadonlyArray<string>
  /** Tokens of each input, in input order. */
  readonly inputTokens: ReadonlyArray<number>
  readonly rateLimit?: RateLimitTicket
}

/** Why admission may refuse a call beyond its content: a rate limit, or the limiter's store is down. */
export type AdmissionRefusal = RateLimited | ServiceUnavailable

/**
 * Admission holds the call's concurrency permit until the scope closes. Given `fiber`, the one the
 * caller runs a step of now, a chat call is admitted when called, in that step: an answer known at
 * once is then an Exit (services/atOnce.ts).
 */
export class Admission extends Context.Tag("svc/Admission")<Admission, {
  readonly chat: (
    request: ChatRequest,
    principal: Principal,
    fiber?: Fiber.RuntimeFiber<unknown, unknown>
  ) => Effect.Effect<AdmittedChat, InvalidRequest | AdmissionRefusal, Scope.Scope>
  readonly embeddings: (
    request: EmbeddingsRequest,
    principal: Principal
  ) => Effect.Effect<AdmittedEmbeddings, AdmissionRefusal, Scope.Scope>
}>() {}
