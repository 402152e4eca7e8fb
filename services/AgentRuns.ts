/**
 * Agent runs (spec 2.1, 2.2, 4.1): a question to an agent, answered from its
 * instructions, the knowledge retrieved for the question and the
 * conversation so far, routed with the agent's preset. One hold covers the
 * whole run before anything is spent, and one receipt bills it, with a line
 * item per billable step (the query's embedding, the generation).
 */
import { Context, type Effect, Schema, type Scope, type Stream } from "effect"
import type { ConversationLimitExceeded, InvalidRequest, NotFound, UpstreamError } from "./ApiError.ts"
import type { Principal } from "./ApiKeys.ts"
import type { Settlement } from "./Billing.ts"
import type { PrivacyBlock } from "./Privacy.ts"
import type { ChatError } from "./ChatGateway.ts"
import type { Source } from "./Retrieval.ts"

/** Longest run `input`, in characters (spec 8). */
export const MAX_RUN_INPUT = 8000

const characters = (text: string) => {
  let count = 0
  for (const _ of text) count++
  return count
}

export const RunRequest = Schema.Struct({
  agent: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  // Characters as people count them: a character outside the BMP is one, not two UTF-16 units.
  input: Schema.String.pipe(
    Schema.minLength(1, { message: () => "input must not be empty." }),
    Schema.filter((text) => characters(text) <= MAX_RUN_INPUT || `input must be at most ${MAX_RUN_INPUT} characters.`)
  ),
  conversation_id: Schema.optional(Schema.NullOr(Schema.String.pipe(Schema.maxLength(200))))
}).annotations({ identifier: "AgentRunRequest" })
export type RunRequest = typeof RunRequest.Type

/** A run's answer: the 2.2 record's facts, with the privacy block and the receipt. */
export interface RunResult {
  /** The answer's `msg_` id in the conversation. */
  readonly id: string
  readonly agentId: string
  readonly conversationId: string
  readonly output: string
  readonly sources: ReadonlyArray<Source>
  /** The generation's tokens, as billed. */
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number }
  readonly route: { readonly tier: string; readonly model: string }
  readonly privacy: PrivacyBlock
  readonly receipt: Settlement
}

/** What a run can fail with. */
export type RunError = ChatError | NotFound | ConversationLimitExceeded | InvalidRequest | UpstreamError

/** What a streamed run tells its caller, in this order (CONTRACT.md "Agents"). */
export type RunEvent =
  | { readonly _tag: "Created"; readonly agentId: string; readonly conversationId: string; readonly receiptId: string }
  | { readonly _tag: "Sources"; readonly sources: ReadonlyArray<Source> }
  | { readonly _tag: "Delta"; readonly text: string }
  | { readonly _tag: "Completed"; readonly result: RunResult }

export interface StreamedRun {
  readonly receiptId: string
  /**
   * The run's events. However the stream ends (done, failed after its first event, or the client
   * left), what was generated is billed and the turns are kept; a failure ends it with its error.
   */
  readonly events: Stream.Stream<RunEvent, ChatError>
}

export class AgentRuns extends Context.Tag("svc/AgentRuns")<AgentRuns, {
  readonly run: (principal: Principal, request: RunRequest) => Effect.Effect<RunResult, RunError>
  /** Succeeds once the model has started answering, so refusals are still HTTP errors. */
  readonly stream: (principal: Principal, request: RunRequest) => Effect.Effect<StreamedRun, RunError, Scope.Scope>
}>() {}
