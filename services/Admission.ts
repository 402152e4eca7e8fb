/**
 * Admission: the first stage of a call. Who may call what (the key and its
 * scope are checked at the edge; the rate limiter plugs in here), and the
 * request judged beyond its schema: sealed messages opened, the privacy
 * envelope read, the input counted once for everything after.
 */
import { Context, type Effect } from "effect"
import type { InvalidRequest } from "./ApiError.ts"
import type { Principal } from "./ApiKeys.ts"
import type { ChatRequest } from "./Chat.ts"
import type { EmbeddingsRequest } from "./Embeddings.ts"
import type { PrivacyAsk } from "./PrivacyPolicy.ts"

/** A chat call let in: everything later stages need to know about who asks and what. */
export interface AdmittedChat {
  readonly principal: Principal
  /** The request with its messages in the clear and no sealed prompt left in it. */
  readonly request: ChatRequest
  readonly privacy: PrivacyAsk
  /** Input tokens by our own count (billed when an upstream reports no usage). */
  readonly inputTokens: number
}

/** An embeddings call let in: its inputs as a list and each one's tokens. */
export interface AdmittedEmbeddings {
  readonly principal: Principal
  readonly request: EmbeddingsRequest
  readonly inputs: ReadonlyArray<string>
  /** Tokens of each input, in input order. */
  readonly inputTokens: ReadonlyArray<number>
}

export class Admission extends Context.Tag("svc/Admission")<Admission, {
  readonly chat: (request: ChatRequest, principal: Principal) => Effect.Effect<AdmittedChat, InvalidRequest>
  readonly embeddings: (request: EmbeddingsRequest, principal: Principal) => Effect.Effect<AdmittedEmbeddings>
}>() {}
