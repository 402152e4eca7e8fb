/**
 * API keys: issued per account with scopes, stored only as a hash, shown once,
 * and checked on every request (revocation counts from the next request).
 */
import { Context, type Effect, type Option, Schema } from "effect"
import type { NotFound, Unauthorized } from "./ApiError.ts"
import type { Page, PageRequest } from "./Pagination.ts"

export const Scope = Schema.Literal("chat", "agents", "monitoring", "admin")
export type Scope = typeof Scope.Type

export interface ApiKeyRecord {
  readonly id: string
  readonly accountId: string
  readonly name: string | null
  /** The first characters of the key, enough to recognise it in a list. */
  readonly hint: string
  readonly scopes: ReadonlyArray<Scope>
  /** Requests per minute; null = no limit. */
  readonly rpm: number | null
  /** Tokens per minute; null = no limit. */
  readonly tpm: number | null
  readonly createdAt: Date
  readonly revokedAt: Date | null
}

/** Who is calling: the key's account and scopes. The bootstrap admin key has no account. */
export interface Principal {
  readonly keyId: string
  readonly accountId: string | null
  readonly scopes: ReadonlyArray<Scope>
  /** The key's own requests per minute (null or absent: the config's default). */
  readonly rpm?: number | null
  /** The key's own tokens per minute (null or absent: the config's default). */
  readonly tpm?: number | null
  /** The account's own cap on concurrent calls (null or absent: the config's default). */
  readonly concurrency?: number | null
}

/** A change of a key's limits: a number sets one, null clears it, absent leaves it. */
export interface KeyLimitsChange {
  readonly rpm?: number | null | undefined
  readonly tpm?: number | null | undefined
}

export class ApiKeys extends Context.Tag("svc/ApiKeys")<ApiKeys, {
  /** Issues a key; the returned `key` is the only copy of the secret. */
  readonly create: (
    accountId: string,
    input: {
      readonly name?: string | undefined
      readonly scopes: ReadonlyArray<Scope>
      readonly rpm?: number | undefined
      readonly tpm?: number | undefined
    }
  ) => Effect.Effect<{ readonly record: ApiKeyRecord; readonly key: string }, NotFound>
  readonly revoke: (keyId: string) => Effect.Effect<ApiKeyRecord, NotFound>
  /** An account's keys, revoked ones included, newest first, one page at a time (never a secret: only hashes are kept). */
  readonly list: (accountId: string, page: PageRequest) => Effect.Effect<Page<ApiKeyRecord>, NotFound>
  /** Changes a key's rate limits; they apply from the key's next request. */
  readonly setLimits: (keyId: string, change: KeyLimitsChange) => Effect.Effect<ApiKeyRecord, NotFound>
  /** Sets (a number) or removes (null) an account's own cap on concurrent calls, for its keys' next requests. */
  readonly setAccountConcurrency: (
    accountId: string,
    concurrency: number | null
  ) => Effect.Effect<{ readonly accountId: string; readonly concurrency: number | null }, NotFound>
  /**
   * Issues the stored operator key (admin scope, no account), shown only here: `"first"` issues one
   * only while none was ever issued (None otherwise; of processes starting together exactly one
   * gets it), `"replace"` issues a new one that replaces the old at once.
   */
  readonly issueOperatorKey: (when: "first" | "replace") => Effect.Effect<Option.Option<string>>
  /** Resolves a bearer token to its principal; any doubt is `Unauthorized`. */
  readonly authenticate: (token: string) => Effect.Effect<Principal, Unauthorized>
}>() {}
