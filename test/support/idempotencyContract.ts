/**
 * The Idempotency contract (services/Idempotency.ts) as one suite that every
 * implementation must pass: IdempotencyPg on a real database and
 * IdempotencyMemory (test/idempotencyContract.test.ts).
 */
import { createHash } from "node:crypto"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { Accounts } from "../../services/Accounts.ts"
import { Idempotency, type IdempotencyKey } from "../../services/Idempotency.ts"
import type { MoneyLayers } from "./moneyLayers.ts"
import { layer } from "./layer.ts"

const digest = (text: string) => createHash("sha256").update(text).digest()

/** The key of a request with `body` under `key` for `accountId`. */
const keyOf = (accountId: string, key: string, body: string): IdempotencyKey => ({
  accountId,
  key,
  requestSha256: digest(`request ${body}`),
  responseKey: digest(`response ${body}`)
})

/** A new account's id (the keys belong to accounts). */
const account = Effect.flatMap(Accounts, (accounts) => Effect.map(accounts.create({ name: "idempotency" }), (created) => created.id))

const response = { status: 200, headers: { "x-svc-receipt-id": "rcpt_1" }, body: { answer: "kept", n: [1, 2] } }

export const idempotencyContract = (implementation: MoneyLayers) =>
  layer(implementation.layer, { timeout: "60 seconds" })(`Idempotency contract: ${implementation.name}`, (it) => {
    it.effect("the first request claims the key; a retry gets its response, another body or a retry too early is a conflict", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const owner = yield* account
        const first = keyOf(owner, "k-1", "a")
        expect(yield* idempotency.claim(first)).toBeUndefined()
        expect(yield* Effect.flip(idempotency.claim(first))).toMatchObject({ _tag: "Conflict", message: expect.stringContaining("in progress") })
        yield* idempotency.complete(first, response)
        expect(yield* idempotency.claim(first)).toEqual(response)
        expect(yield* Effect.flip(idempotency.claim(keyOf(owner, "k-1", "b")))).toMatchObject({
          _tag: "Conflict",
          param: "Idempotency-Key",
          message: expect.stringContaining("different request body")
        })
      }))

    it.effect("a forgotten key runs again; a key is the account's own", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const [owner, other] = [yield* account, yield* account]
        const failed = keyOf(owner, "k-2", "a")
        expect(yield* idempotency.claim(failed)).toBeUndefined()
        yield* idempotency.forget(failed)
        expect(yield* idempotency.claim(failed)).toBeUndefined()
        expect(yield* idempotency.claim(keyOf(other, "k-2", "other body"))).toBeUndefined()
      }))

    it.effect("a claim still running after a reservation's lease was left by a dead process: it may be taken again", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const abandoned = keyOf(yield* account, "k-4", "a")
        expect(yield* idempotency.claim(abandoned)).toBeUndefined()
        yield* implementation.passLease
        expect(yield* idempotency.claim(abandoned)).toBeUndefined()
      }))
  })
