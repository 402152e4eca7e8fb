/**
 * The ApiKeys contract (services/ApiKeys.ts) as one suite that every
 * implementation must pass: ApiKeysPg on a real database and ApiKeysMemory
 * (test/apiKeysContract.test.ts).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { RecordedEvents } from "../../layers/events/EventLogMemory.ts"
import { Accounts } from "../../services/Accounts.ts"
import { ApiKeys } from "../../services/ApiKeys.ts"
import { ADMIN_KEY, type MoneyLayers } from "./moneyLayers.ts"

export const apiKeysContract = (implementation: MoneyLayers) =>
  layer(implementation.layer, { timeout: "60 seconds" })(`ApiKeys contract: ${implementation.name}`, (it) => {
    it.effect("issues a key shown once, stored as its record, that authenticates as its account and scopes", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const account = yield* Effect.flatMap(Accounts, (accounts) => accounts.create({ name: "keys" }))
        const { key, record } = yield* keys.create(account.id, { scopes: ["chat", "monitoring", "chat"], name: "ci", rpm: 60 })
        expect(key).toMatch(/^svc_live_[0-9A-Za-z]{40}$/)
        expect(record).toMatchObject({
          accountId: account.id,
          name: "ci",
          hint: key.slice(0, 13),
          scopes: ["chat", "monitoring"],
          rpm: 60,
          tpm: null,
          revokedAt: null
        })
        expect(record.id).toMatch(/^key_/)
        expect(yield* keys.authenticate(key)).toEqual({
          keyId: record.id,
          accountId: account.id,
          scopes: ["chat", "monitoring"],
          rpm: 60,
          tpm: null,
          concurrency: null
        })
        const recorded = yield* Effect.flatMap(RecordedEvents, (events) => events.all)
        expect(recorded.filter((event) => event.type === "key.created" && event.data.key_id === record.id)).toHaveLength(1)
      }))

    it.effect("refuses a revoked key from the next request on, and revoking again keeps the first time", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const account = yield* Effect.flatMap(Accounts, (accounts) => accounts.create({ name: "revoked" }))
        const { key, record } = yield* keys.create(account.id, { scopes: ["chat"] })
        yield* keys.authenticate(key)
        const revoked = yield* keys.revoke(record.id)
        expect(revoked.revokedAt).toBeInstanceOf(Date)
        expect((yield* Effect.flip(keys.authenticate(key)))._tag).toBe("Unauthorized")
        expect((yield* keys.revoke(record.id)).revokedAt).toEqual(revoked.revokedAt)
      }))

    it.effect("changes a key's limits (a number sets, null clears, absent keeps), seen from the key's next request", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const account = yield* Effect.flatMap(Accounts, (accounts) => accounts.create({ name: "limits" }))
        const { key, record } = yield* keys.create(account.id, { scopes: ["chat"], tpm: 1000 })
        expect(yield* keys.authenticate(key)).toMatchObject({ rpm: null, tpm: 1000 })
        expect(yield* keys.setLimits(record.id, { rpm: 5 })).toMatchObject({ id: record.id, rpm: 5, tpm: 1000 })
        expect(yield* keys.authenticate(key)).toMatchObject({ rpm: 5, tpm: 1000 })
        expect(yield* keys.setLimits(record.id, { tpm: null })).toMatchObject({ rpm: 5, tpm: null })
        expect(yield* keys.authenticate(key)).toMatchObject({ rpm: 5, tpm: null })
        expect((yield* Effect.flip(keys.setLimits("key_missing", { rpm: 1 })))._tag).toBe("NotFound")
      }))

    it.effect("an account's own concurrency cap reaches its keys' principals from their next request", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const account = yield* Effect.flatMap(Accounts, (accounts) => accounts.create({ name: "concurrency" }))
        const { key } = yield* keys.create(account.id, { scopes: ["chat"] })
        expect((yield* keys.authenticate(key)).concurrency ?? null).toBeNull()
        expect(yield* keys.setAccountConcurrency(account.id, 3)).toEqual({ accountId: account.id, concurrency: 3 })
        expect(yield* keys.authenticate(key)).toMatchObject({ concurrency: 3 })
        yield* keys.setAccountConcurrency(account.id, null)
        expect((yield* keys.authenticate(key)).concurrency ?? null).toBeNull()
        expect((yield* Effect.flip(keys.setAccountConcurrency("acct_missing", 1)))._tag).toBe("NotFound")
      }))

    it.effect("gives one answer for every key it refuses, and not found for unknown ids", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const refusals = yield* Effect.forEach(
          ["", "nonsense", `svc_live_${"A".repeat(40)}`, `${ADMIN_KEY}x`],
          (token) => Effect.flip(keys.authenticate(token))
        )
        expect(new Set(refusals.map((refusal) => `${refusal._tag}: ${refusal.message}`)).size).toBe(1)
        expect((yield* Effect.flip(keys.create("acct_missing", { scopes: ["chat"] })))._tag).toBe("NotFound")
        expect((yield* Effect.flip(keys.revoke("key_missing")))._tag).toBe("NotFound")
      }))

    it.effect("lets the bootstrap operator key in with the admin scope and no account", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        expect(yield* keys.authenticate(ADMIN_KEY)).toMatchObject({ accountId: null, scopes: ["admin"] })
      }))
  })
