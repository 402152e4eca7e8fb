/**
 * An agent's conversations: started under the agent's cap (the first one
 * over it is `ConversationLimitExceeded`, also when processes race for the
 * last slot), found only through their agent and account (else `NotFound`),
 * and their turns appended in order and read back newest last.
 */
import { Context, type Effect } from "effect"
import type { ConversationLimitExceeded, NotFound } from "./ApiError.ts"

export interface Conversation {
  readonly id: string
  readonly agentId: string
  readonly createdAt: Date
}

export interface Turn {
  /** `msg_` id. */
  readonly id: string
  readonly role: "user" | "assistant"
  readonly content: string
  /** The run's receipt (on the assistant's turn). */
  readonly receiptId: string | null
  readonly createdAt: Date
}

export interface NewTurn {
  readonly role: "user" | "assistant"
  readonly content: string
  readonly receiptId?: string | null | undefined
}

export class Conversations extends Context.Tag("svc/Conversations")<Conversations, {
  /** A new conversation of the agent, counted against its cap. */
  readonly start: (accountId: string, agentId: string) => Effect.Effect<Conversation, NotFound | ConversationLimitExceeded>
  readonly get: (accountId: string, agentId: string, conversationId: string) => Effect.Effect<Conversation, NotFound>
  /** Appends turns after the last one, in order; their ids, as made here. */
  readonly append: (conversationId: string, turns: ReadonlyArray<NewTurn>) => Effect.Effect<ReadonlyArray<Turn>>
  /** Deletes a conversation that has no turns (the run that started it failed), freeing its slot under the cap. */
  readonly discard: (conversationId: string) => Effect.Effect<void>
  /** The last `limit` turns, oldest first. */
  readonly history: (conversationId: string, limit: number) => Effect.Effect<ReadonlyArray<Turn>>
}>() {}
