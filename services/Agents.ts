/**
 * Managed agents (spec 1.4, CONTRACT.md "Agents"): an agent of an account
 * bundles instructions, a routing preset (what a chat request would say in
 * `model`, `models`, `route`, `privacy`) and knowledge (documents, stored as
 * chunks with their embeddings). Another account's agent does not exist for
 * the caller: every lookup is by account and id, and a miss is `NotFound`.
 */
import { Context, type Effect, Schema } from "effect"
import type { NotFound } from "./ApiError.ts"
import { PrivacyRequest } from "./Chat.ts"
import type { Page, PageRequest } from "./Pagination.ts"

/** Conversations an agent may have unless it says otherwise (CONTRACT.md). */
export const DEFAULT_CONVERSATION_CAP = 1000

/** How an agent's runs are routed: the routing fields of a chat request. */
export const AgentRouting = Schema.Struct({
  /** A catalogue model id, or a router mode (`auto`, `cheap`, ...). */
  model: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  models: Schema.optional(Schema.Array(Schema.String.pipe(Schema.maxLength(200))).pipe(Schema.maxItems(16))),
  route: Schema.optional(Schema.Literal("auto", "fallback")),
  privacy: Schema.optional(Schema.Struct({
    class: PrivacyRequest.fields.class,
    bestAvailable: PrivacyRequest.fields.bestAvailable,
    allowFallbackToLowerClass: PrivacyRequest.fields.allowFallbackToLowerClass
  }))
}).annotations({ identifier: "AgentRouting" })
export type AgentRouting = typeof AgentRouting.Type

export interface Agent {
  readonly id: string
  readonly accountId: string
  readonly name: string
  readonly instructions: string
  readonly routing: AgentRouting
  /** The model its knowledge is embedded with (documents and queries alike). */
  readonly embeddingModel: string
  readonly conversationCap: number
  readonly conversationCount: number
  readonly documentCount: number
  readonly createdAt: Date
}

export interface NewAgent {
  readonly name: string
  readonly instructions: string
  readonly routing: AgentRouting
  readonly embeddingModel: string
  readonly conversationCap: number
}

export interface AgentDocument {
  readonly id: string
  readonly agentId: string
  readonly title: string
  /** Length of the text, in characters. */
  readonly characters: number
  readonly chunkCount: number
  /** The receipt of the embeddings call that ingested it. */
  readonly receiptId: string | null
  readonly createdAt: Date
}

/** A chunk of a document as ingested: its text and its embedding. */
export interface NewChunk {
  readonly text: string
  readonly embedding: ReadonlyArray<number>
}

export class Agents extends Context.Tag("svc/Agents")<Agents, {
  readonly create: (accountId: string, agent: NewAgent) => Effect.Effect<Agent>
  readonly get: (accountId: string, agentId: string) => Effect.Effect<Agent, NotFound>
  /** An account's agents, newest first, one page at a time. */
  readonly list: (accountId: string, page: PageRequest) => Effect.Effect<Page<Agent>>
  /** Deletes the agent with its documents, chunks and conversations. */
  readonly remove: (accountId: string, agentId: string) => Effect.Effect<Agent, NotFound>
  /** Stores a document with its chunks (ids made here, in order). */
  readonly addDocument: (
    accountId: string,
    agentId: string,
    document: { readonly title: string; readonly characters: number; readonly receiptId: string | null },
    chunks: ReadonlyArray<NewChunk>
  ) => Effect.Effect<AgentDocument, NotFound>
  readonly listDocuments: (accountId: string, agentId: string, page: PageRequest) => Effect.Effect<Page<AgentDocument>, NotFound>
  /** Deletes a document and its chunks. */
  readonly removeDocument: (accountId: string, agentId: string, documentId: string) => Effect.Effect<AgentDocument, NotFound>
}>() {}
