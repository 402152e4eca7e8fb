/**
 * Prompt storage for the standard class (spec 2.4, `svc_stores_prompts`): when
 * the operator turns on `promptStorage.standardRoute`, the prompt and
 * completion text of each chat call served at `standard_route` is kept for
 * `retentionDays`, readable by the account at `GET /v1/receipts/{id}/transcript`.
 * Calls served at any stronger class are never kept: `keep` ignores them, so
 * no caller of it can get this wrong.
 */
import { Context, type Effect } from "effect"
import type { NotFound } from "./ApiError.ts"
import type { Message, ToolCall } from "./Chat.ts"
import type { PrivacyClass } from "./Config.ts"

export interface TranscriptCompletion {
  readonly content: string | null
  readonly tool_calls?: ReadonlyArray<ToolCall>
}

export interface Transcript {
  readonly receiptId: string
  readonly accountId: string
  readonly messages: ReadonlyArray<Message>
  readonly completion: TranscriptCompletion
  readonly createdAt: Date
  readonly expiresAt: Date
}

export class Transcripts extends Context.Tag("svc/Transcripts")<Transcripts, {
  /** Whether a call served at this class has its text kept (what the privacy block states). */
  readonly keeps: (privacyClass: PrivacyClass) => boolean
  /** How long kept text stays. */
  readonly retentionDays: number
  /** Keeps a settled call's text when `keeps(servedClass)`; does nothing otherwise. Never fails the call. */
  readonly keep: (call: {
    readonly receiptId: string
    readonly accountId: string
    readonly servedClass: PrivacyClass
    readonly messages: ReadonlyArray<Message>
    readonly completion: TranscriptCompletion
  }) => Effect.Effect<void>
  /** The account's kept transcript of a receipt; not found when none was kept or it has expired. */
  readonly get: (accountId: string, receiptId: string) => Effect.Effect<Transcript, NotFound>
}>() {}

/**
 * The one rule for which calls have their text kept: only when the operator turned
 * `promptStorage.standardRoute` on, and only for calls served at `standard_route`.
 */
export const keepsTextOf = (standardRoute: boolean) => (privacyClass: PrivacyClass): boolean =>
  standardRoute && privacyClass === "standard_route"
