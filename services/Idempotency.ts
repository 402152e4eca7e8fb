/**
 * `Idempotency-Key` on billable POSTs: the first request with a key runs and
 * its response is kept; a retry with the same key and body gets that response
 * again (same receipt, billed once); the same key with another body, or while
 * the first is still running, is a 409 `idempotency_conflict`. A first request
 * that failed is forgotten, so its retry runs (a failure bills nothing).
 */
import { Context, type Effect } from "effect"
import type { Conflict } from "./ApiError.ts"

export interface StoredResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

export class Idempotency extends Context.Tag("svc/Idempotency")<Idempotency, {
  readonly once: <E, R>(
    input: { readonly accountId: string; readonly key: string; readonly requestSha256: Uint8Array },
    run: Effect.Effect<StoredResponse, E, R>
  ) => Effect.Effect<{ readonly response: StoredResponse; readonly replayed: boolean }, E | Conflict, R>
}>() {}
