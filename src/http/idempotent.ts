/** `Idempotency-Key` at the HTTP edge: the key of a billable request, and its JSON responses made once per key. */
import { createHash } from "node:crypto"
import { Effect, Stream } from "effect"
import type { Conflict } from "../../services/ApiError.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import { completeQuietly, Idempotency, type IdempotencyKey, once, type StoredResponse } from "../../services/Idempotency.ts"
import { jsonResponse } from "./jsonSlices.ts"

/** The key of a billable request: the caller's account, the header, and a hash of what was asked. */
export const idempotencyKeyOf = (
  principal: Principal,
  header: string | undefined,
  endpoint: string,
  payload: unknown
): IdempotencyKey | undefined =>
  header === undefined ? undefined : {
    // Keys of the billable scopes always belong to an account.
    accountId: principal.accountId!,
    key: header,
    // The endpoint is part of the request: one key reused on another endpoint is a conflict.
    requestSha256: createHash("sha256").update(endpoint).update("\n").update(JSON.stringify(payload)).digest(),
    // A second, independent derivation: the stored hash does not give it away.
    responseKey: createHash("sha256").update("svc sealed response\n").update(endpoint).update("\n")
      .update(JSON.stringify(payload)).digest()
  }

/** Marks a response that is the kept first response of its key. */
export const REPLAYED = { "idempotent-replayed": "true" } as const

/**
 * A JSON response made at most once per key: without a key `run` just runs; with one, a retry
 * gets the kept first response. The service is given, not taken from the context: providing it
 * would copy the whole service context on every call, keyed or not.
 */
export const jsonOnce = <E, R>(
  idempotency: Idempotency["Type"],
  key: IdempotencyKey | undefined,
  run: Effect.Effect<StoredResponse, E, R>
) =>
  Effect.map(answeredOnce(idempotency, key, run), asJsonResponse)

/** A JSON answer as its response, built without a second Schema pass: the gateways already return the wire shape. */
export const asJsonResponse = (response: StoredResponse) =>
  jsonResponse(response.body, { status: response.status, headers: response.headers })

/** `jsonOnce`'s answer before it is encoded: what `run` answered, or the kept first answer marked as replayed. */
export const answeredOnce = <E, R>(
  idempotency: Idempotency["Type"],
  key: IdempotencyKey | undefined,
  run: Effect.Effect<StoredResponse, E, R>
): Effect.Effect<StoredResponse, E | Conflict, R> =>
  key === undefined
    ? run
    : Effect.map(Effect.provideService(once(key, run), Idempotency, idempotency), ({ replayed, response }) =>
      replayed ? { ...response, headers: { ...response.headers, ...REPLAYED } } : response)

/**
 * A stream's items as its caller received them, kept under `key` once the stream has ended however
 * it ended (it was billed); `bodyOf` is what a replay reads back.
 */
export const keptWhenDone = <A, E>(
  idempotency: Idempotency["Type"],
  items: Stream.Stream<A, E>,
  key: IdempotencyKey,
  head: Record<string, string>,
  bodyOf: (sent: ReadonlyArray<A>) => unknown
) => {
  const sent: Array<A> = []
  return items.pipe(
    Stream.tap((item) => Effect.sync(() => sent.push(item))),
    Stream.ensuring(Effect.suspend(() => completeQuietly(idempotency, key, { status: 200, headers: head, body: bodyOf(sent) })))
  )
}
