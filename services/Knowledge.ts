/**
 * An agent's knowledge: documents chunked by structure and size, embedded
 * through the embeddings path (billed to the caller, with a receipt, like any
 * embeddings call) with the agent's embedding model, and stored with their
 * chunks (services/Agents.ts).
 */
import { Context, type Effect } from "effect"
import type { Agent, AgentDocument } from "./Agents.ts"
import type { InvalidRequest, NotFound, PrivacyClassUnavailable } from "./ApiError.ts"
import type { Principal } from "./ApiKeys.ts"
import type { Settlement } from "./Billing.ts"
import type { EmbeddingsError } from "./EmbeddingsGateway.ts"

/** Longest document text, in characters (about 50,000 tokens of English). */
export const MAX_DOCUMENT_CHARACTERS = 200_000

/** Longest document title, in characters. */
export const MAX_DOCUMENT_TITLE = 300

export class Knowledge extends Context.Tag("svc/Knowledge")<Knowledge, {
  /**
   * What `ingest` refuses before it spends anything (a class embeddings cannot serve, a document
   * with no text), so an agent's inline knowledge is checked whole before the agent is stored.
   */
  readonly check: (
    agent: Pick<Agent, "routing">,
    document: { readonly text: string }
  ) => Effect.Effect<ReadonlyArray<string>, InvalidRequest | PrivacyClassUnavailable>
  /** Chunks, embeds (billed to `principal`) and stores a document of `agent`. */
  readonly ingest: (
    principal: Principal,
    agent: Agent,
    document: { readonly title: string; readonly text: string }
  ) => Effect.Effect<{ readonly document: AgentDocument; readonly receipt: Settlement }, EmbeddingsError | InvalidRequest | NotFound | PrivacyClassUnavailable>
}>() {}
