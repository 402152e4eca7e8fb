/**
 * Idempotency keys in memory, for unit tests: the first request with a key
 * claims it, a retry with the same body gets the kept response, the same key
 * with another body (or while the first still runs) is a conflict, a failed
 * first request is forgotten, and a claim left running longer than a
 * reservation's lease may be taken again — as IdempotencyPg
 * (test/idempotencyContract.test.ts runs one suite on both).
 *
 * Not modelled: sealing the kept response (it is kept as given; nothing here
 * outlives the test) and the database's clock (times come from `Clock`).
 */
import { Clock, Effect, Layer } from "effect"
import { AppConfig } from "../../services/Config.ts"
import { Idempotency, type IdempotencyKey, type StoredResponse } from "../../services/Idempotency.ts"
import { stillRunning, usedWithAnotherBody } from "./idempotencyRefusals.ts"

interface Kept {
  readonly requestSha256: Uint8Array
  readonly claimedAt: number
  response: StoredResponse | undefined
}

const slot = ({ accountId, key }: IdempotencyKey) => `${accountId}\n${key}`
const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b))

export const IdempotencyMemory: Layer.Layer<Idempotency, never, AppConfig> = Layer.effect(
  Idempotency,
  Effect.gen(function*() {
    const abandonedAfterMs = (yield* AppConfig).file.billing.reservationLeaseSeconds * 1000
    const kept = new Map<string, Kept>()

    return Idempotency.of({
      claim: (claim) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const found = kept.get(slot(claim))
          const abandoned = found !== undefined && found.response === undefined && now - found.claimedAt > abandonedAfterMs
          if (found === undefined || abandoned) {
            kept.set(slot(claim), { requestSha256: claim.requestSha256, claimedAt: now, response: undefined })
            return Effect.succeed(undefined)
          }
          if (!sameBytes(found.requestSha256, claim.requestSha256)) return Effect.fail(usedWithAnotherBody())
          if (found.response === undefined) return Effect.fail(stillRunning())
          return Effect.succeed(found.response)
        }),
      complete: (claim, response) =>
        Effect.sync(() => {
          const found = kept.get(slot(claim))
          if (found !== undefined) found.response = response
        }),
      forget: (claim) => Effect.sync(() => void kept.delete(slot(claim)))
    })
  })
)
