/**
 * `Idempotency-Key` on billable POSTs: the first request with a key claims it
 * and its response is kept; a retry with the same key and body gets that
 * response again (same receipt, billed once); the same key with another body,
 * or while the first is still running, is a 409 `idempotency_conflict`. A
 * first request that failed is forgotten, so its retry runs (a failure bills
 * nothing). A streamed response is kept as its chunks, once it has ended.
 */
import { Context, Effect, Exit } from "effect"
import type { Conflict } from "./ApiError.ts"
import { isDatabaseOutage } from "./DatabaseStatus.ts"

export interface StoredResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

export interface IdempotencyKey {
  readonly accountId: string
  readonly key: string
  readonly requestSha256: Uint8Array
  /** Seals the kept response; derived from the request, never stored. */
  readonly responseKey: Uint8Array
}

export class Idempotency extends Context.Tag("svc/Idempotency")<Idempotency, {
  /** Claims the key for a new request, or answers with the stored response of the first one. */
  readonly claim: (key: IdempotencyKey) => Effect.Effect<StoredResponse | undefined, Conflict>
  /** Keeps the response of the request that claimed the key. */
  readonly complete: (key: IdempotencyKey, response: StoredResponse) => Effect.Effect<void>
  /** Frees the key of a request that failed, so a retry runs. */
  readonly forget: (key: IdempotencyKey) => Effect.Effect<void>
}>() {}

/**
 * Keeps a finished call's response; a failure to keep it (the database away) does not take the
 * answer from the caller, who was served and billed: the key then stays claimed until its lease.
 */
export const completeQuietly = (idempotency: Idempotency["Type"], key: IdempotencyKey, response: StoredResponse) =>
  idempotency.complete(key, response).pipe(
    Effect.catchAllCause((cause) =>
      isDatabaseOutage(cause) ? Effect.void : Effect.logWarning("idempotency: response not kept", cause)
    )
  )

/** Runs `run` once per key: a retry gets the kept response, with `replayed` set. */
export const once = <E, R>(key: IdempotencyKey, run: Effect.Effect<StoredResponse, E, R>) =>
  Effect.flatMap(Idempotency, (idempotency) =>
    Effect.flatMap(idempotency.claim(key), (stored) =>
      stored !== undefined
        ? Effect.succeed({ response: stored, replayed: true })
        : run.pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) ? completeQuietly(idempotency, key, exit.value) : idempotency.forget(key)
          ),
          Effect.map((response) => ({ response, replayed: false }))
        )))
