/** Chat completions: shape translation only; the gateway and idempotency services do the work. */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Exit, Stream } from "effect"
import type { ChatChunk } from "../../services/Chat.ts"
import { ChatGateway } from "../../services/ChatGateway.ts"
import { completeQuietly, Idempotency, type IdempotencyKey, type StoredResponse } from "../../services/Idempotency.ts"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { billingHeaders } from "../http/billingHeaders.ts"
import { idempotencyKeyOf, jsonOnce, REPLAYED } from "../http/idempotent.ts"
import { sseResponse } from "../http/Sse.ts"

/** A kept stream is the chunks its caller received. */
interface StoredStream {
  readonly chunks: ReadonlyArray<ChatChunk>
}

export const ChatHandlers = HttpApiBuilder.group(Api, "chat", (handlers) =>
  Effect.gen(function*() {
    const gateway = yield* ChatGateway
    const idempotency = yield* Idempotency

    /** Keeps what the caller received once the stream has ended, however it ended: it was billed. */
    const keptWhenDone = (chunks: Stream.Stream<ChatChunk, any>, key: IdempotencyKey, head: Record<string, string>) => {
      const sent: Array<ChatChunk> = []
      return chunks.pipe(
        Stream.tap((chunk) => Effect.sync(() => sent.push(chunk))),
        Stream.ensuring(Effect.suspend(() => completeQuietly(idempotency, key, { status: 200, headers: head, body: { chunks: sent } })))
      )
    }

    const replayStream = (stored: StoredResponse) =>
      HttpServerResponse.setHeaders(
        sseResponse(Stream.fromIterable((stored.body as StoredStream).chunks)),
        { ...stored.headers, ...REPLAYED }
      )

    return handlers.handle("createChatCompletion", ({ headers, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const key = idempotencyKeyOf(principal, headers["idempotency-key"], "/v1/chat/completions", payload)

        if (payload.stream === true) {
          const stored = key === undefined ? undefined : yield* idempotency.claim(key)
          if (stored !== undefined) return replayStream(stored)
          const { chunks, receiptId } = yield* gateway.stream(payload, principal).pipe(
            Effect.onExit((exit) => Exit.isFailure(exit) && key !== undefined ? idempotency.forget(key) : Effect.void)
          )
          // The amounts are known only when the stream ends; the receipt id is known now.
          const head = { "x-svc-receipt-id": receiptId }
          return HttpServerResponse.setHeaders(
            sseResponse(key === undefined ? chunks : keptWhenDone(chunks, key, head)),
            head
          )
        }

        const complete = Effect.map(gateway.complete(payload, principal), ({ completion, receipt }) => ({
          status: 200,
          headers: billingHeaders(receipt),
          body: completion as unknown
        }))
        return yield* jsonOnce(key, complete).pipe(Effect.provideService(Idempotency, idempotency))
      }))
  }))
