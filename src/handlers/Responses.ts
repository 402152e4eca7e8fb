/**
 * `POST /v1/responses`: translates the request to chat (src/responses/),
 * runs it through the chat gateway, and translates the completion or the
 * chunk stream back. Idempotent like chat: a kept stream replays its events.
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Exit, Stream } from "effect"
import { ChatGateway } from "../../services/ChatGateway.ts"
import { Idempotency, type StoredResponse } from "../../services/Idempotency.ts"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { billingHeaders } from "../http/billingHeaders.ts"
import { idempotencyKeyOf, jsonOnce, keptWhenDone, REPLAYED } from "../http/idempotent.ts"
import { eventTranslator, type ResponsesEvent } from "../responses/events.ts"
import { responseIds, toResponse } from "../responses/fromChat.ts"
import { eventFrame, responsesSse } from "../responses/sse.ts"
import { toChatRequest } from "../responses/toChat.ts"

/** A kept stream is the events its caller received. */
interface StoredEvents {
  readonly events: ReadonlyArray<ResponsesEvent>
}

export const ResponsesHandlers = HttpApiBuilder.group(Api, "responses", (handlers) =>
  Effect.gen(function*() {
    const gateway = yield* ChatGateway
    const idempotency = yield* Idempotency

    const replay = (stored: StoredResponse) =>
      HttpServerResponse.setHeaders(
        responsesSse(Stream.fromIterable((stored.body as StoredEvents).events).pipe(Stream.map(eventFrame))),
        { ...stored.headers, ...REPLAYED }
      )

    return handlers.handle("createResponse", ({ headers, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const chat = yield* toChatRequest(payload)
        const key = idempotencyKeyOf(principal, headers["idempotency-key"], "/v1/responses", payload)

        if (chat.stream === true) {
          const stored = key === undefined ? undefined : yield* idempotency.claim(key)
          if (stored !== undefined) return replay(stored)
          const { chunks, receiptId } = yield* gateway.stream(chat, principal).pipe(
            Effect.onExit((exit) => Exit.isFailure(exit) && key !== undefined ? idempotency.forget(key) : Effect.void)
          )
          const translator = eventTranslator(responseIds(receiptId))
          const events = chunks.pipe(
            Stream.mapConcat(translator.chunk),
            Stream.concat(Stream.suspend(() => Stream.fromIterable(translator.end()))),
            Stream.catchAll((error) => Stream.fromIterable(translator.fail(error)))
          )
          const head = { "x-svc-receipt-id": receiptId }
          const kept = key === undefined ? events : keptWhenDone(idempotency, events, key, head, (sent) => ({ events: sent }))
          return HttpServerResponse.setHeaders(responsesSse(Stream.map(kept, eventFrame)), head)
        }

        const complete = Effect.map(gateway.complete(chat, principal), ({ completion, receipt }) => ({
          status: 200,
          headers: billingHeaders(receipt),
          body: toResponse(completion, receipt.id) as unknown
        }))
        return yield* jsonOnce(idempotency, key, complete)
      }))
  }))
