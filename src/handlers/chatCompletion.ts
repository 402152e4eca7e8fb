/**
 * Chat completions, shape translation only: the gateway and idempotency
 * services do the work. Shared by the API's handler (src/handlers/Chat.ts)
 * and the chat lane (src/http/lane/), so both answer alike.
 */
import type { HttpServerResponse } from "@effect/platform"
import { HttpServerResponse as Response } from "@effect/platform"
import { Effect, Exit, type Scope, Stream } from "effect"
import type { Conflict } from "../../services/ApiError.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import type { ChatChunk, ChatRequest } from "../../services/Chat.ts"
import { type ChatError, ChatGateway } from "../../services/ChatGateway.ts"
import { Idempotency, type IdempotencyKey, type StoredResponse } from "../../services/Idempotency.ts"
import { billingHeaders } from "../http/billingHeaders.ts"
import { answeredOnce, asJsonResponse, idempotencyKeyOf, keptWhenDone, REPLAYED } from "../http/idempotent.ts"
import { sseResponse } from "../http/Sse.ts"

/** A kept stream is the chunks its caller received. */
interface StoredStream {
  readonly chunks: ReadonlyArray<ChatChunk>
}

/**
 * A chat completion's answer: a JSON one as its status, headers and body, encoded by whoever writes
 * it (the chat lane writes it straight to Node's response); a stream as its response.
 */
export type ChatAnswer = StoredResponse | HttpServerResponse.HttpServerResponse

/**
 * One chat completion's answer: `idempotencyHeader` is the request's `Idempotency-Key`, if any. A
 * stream's hold lives in the scope, which must outlast the response's body.
 */
export type ChatCompletionCall = (
  payload: ChatRequest,
  idempotencyHeader: string | undefined,
  principal: Principal
) => Effect.Effect<ChatAnswer, ChatError | Conflict, Scope.Scope>

/** A chat completion's answer as the API's handler returns it: a JSON one encoded (src/http/jsonSlices.ts). */
export const asResponse = (answer: ChatAnswer): HttpServerResponse.HttpServerResponse =>
  Response.isServerResponse(answer) ? answer : asJsonResponse(answer)

export const makeChatCompletion = Effect.gen(function*() {
  const gateway = yield* ChatGateway
  const idempotency = yield* Idempotency

  const replayStream = (stored: StoredResponse) =>
    Response.setHeaders(
      sseResponse(Stream.fromIterable((stored.body as StoredStream).chunks)),
      { ...stored.headers, ...REPLAYED }
    )

  const streamed = (payload: ChatRequest, principal: Principal, key: IdempotencyKey | undefined) =>
    Effect.gen(function*() {
      const stored = key === undefined ? undefined : yield* idempotency.claim(key)
      if (stored !== undefined) return replayStream(stored)
      const { chunks, receiptId } = yield* gateway.stream(payload, principal).pipe(
        Effect.onExit((exit) => Exit.isFailure(exit) && key !== undefined ? idempotency.forget(key) : Effect.void)
      )
      // The amounts are known only when the stream ends; the receipt id is known now.
      const head = { "x-svc-receipt-id": receiptId }
      return Response.setHeaders(
        sseResponse(key === undefined ? chunks : keptWhenDone(idempotency, chunks, key, head, (sent) => ({ chunks: sent }))),
        head
      )
    })

  // A chain, not a generator: every JSON call runs it. Made when called, with no step of its own:
  // nothing here runs before its effect does (the gateway's and idempotency's effects are made lazily).
  const call: ChatCompletionCall = (payload, idempotencyHeader, principal) => {
    const key = idempotencyKeyOf(principal, idempotencyHeader, "/v1/chat/completions", payload)
    if (payload.stream === true) return streamed(payload, principal, key)
    const complete = Effect.map(gateway.complete(payload, principal), ({ completion, receipt }): StoredResponse => ({
      status: 200,
      headers: billingHeaders(receipt),
      body: completion
    }))
    return answeredOnce(idempotency, key, complete)
  }
  return call
})
