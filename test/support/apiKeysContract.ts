/**
 * The ApiKeys contract (services/ApiKeys.ts) as one suite that every
 * implementation must pass: ApiKeysPg on a real database and ApiKeysMemory
 * (test/apiKeysContract.test.ts).
 */
import { expect } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { RecordedEvents } from "../../layers/events/EventLogMemory.ts"
import { Accounts } from "../../services/Accounts.ts"
import { ApiKeys } from "../../services/ApiKeys.ts"
import type { Page, PageRequest } from "../../services/Pagination.ts"
import { ADMIN_KEY, type MoneyLayers } from "./moneyLayers.ts"
import { layer } from "./layer.ts"

/** Every page from the first on, `limit` at a time, as lists of ids (checking each page's size and end). */
const allPages = <E>(list: (request: PageRequest) => Effect.Effect<Page<{ readonly id: string }>, E>, limit: number) =>
  Effect.gen(function*() {
    const pages: Array<Array<string>> = []
    let request: PageRequest = { limit }
    while (true) {
      const page = yield* list(request)
      pages.push(page.items.map((item) => item.id))
      expect(page.items.length).toBeLessThanOrEqual(limit)
      if (page.next === null) return pages
      expect(page.items.length).toBe(limit)
      expect(page.next.id).toBe(page.items[limit - 1]!.id)
      request = { limit, after: page.next }
    }
  })

/** Lets time pass between creations: the TestClock in memory (the database's own clock moves on by itself). */
const later = TestClock.adjust("1 millis")

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

    it.effect("issues the operator key once on a first start, replaces it on demand, and refuses the old one", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const first = Option.getOrThrow(yield* keys.issueOperatorKey("first"))
        expect(first).toMatch(/^svc_admin_[0-9A-Za-z]{40}$/)
        expect(yield* keys.authenticate(first)).toMatchObject({ accountId: null, scopes: ["admin"] })
        // A later start issues none.
        expect(Option.isNone(yield* keys.issueOperatorKey("first"))).toBe(true)
        const replacement = Option.getOrThrow(yield* keys.issueOperatorKey("replace"))
        expect(replacement).not.toBe(first)
        expect(yield* keys.authenticate(replacement)).toMatchObject({ accountId: null, scopes: ["admin"] })
        const refused = yield* Effect.flip(keys.authenticate(first))
        expect(refused.message).toBe((yield* Effect.flip(keys.authenticate("nonsense"))).message)
        expect((yield* Effect.flip(keys.authenticate(`svc_admin_${"A".repeat(40)}`)))._tag).toBe("Unauthorized")
      }))

    it.effect("lists accounts newest first, a page at a time, each exactly once", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const created: Array<string> = []
        for (const name of ["list-a", "list-b", "list-c"]) {
          yield* later
          created.push((yield* accounts.create({ name })).id)
        }
        const newest = yield* accounts.list({ limit: 2 })
        expect(newest.items.map((account) => account.id)).toEqual([created[2], created[1]])
        expect(newest.items[0]).toEqual(yield* accounts.get(created[2]!))
        const rest = yield* accounts.list({ limit: 1, after: newest.next! })
        expect(rest.items.map((account) => account.id)).toEqual([created[0]])
        // Other tests' accounts are there too (some created in the same millisecond): every one once, in order.
        const ids = (yield* allPages(accounts.list, 2)).flat()
        expect(new Set(ids).size).toBe(ids.length)
        expect(ids.filter((id) => created.includes(id))).toEqual([...created].reverse())
        expect(ids).toEqual((yield* accounts.list({ limit: 1000 })).items.map((account) => account.id))
      }))

    it.effect("lists an account's keys newest first, revoked ones with their revocation, and never another account's", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const [account, other] = yield* Effect.forEach(["listed", "other"], (name) =>
          Effect.flatMap(Accounts, (accounts) => accounts.create({ name })))
        expect(yield* keys.list(account!.id, { limit: 10 })).toEqual({ items: [], next: null })
        const issued: Array<string> = []
        for (const scope of ["chat", "monitoring", "agents"] as const) {
          yield* later
          issued.push((yield* keys.create(account!.id, { scopes: [scope] })).record.id)
        }
        yield* keys.create(other!.id, { scopes: ["chat"] })
        const revoked = yield* keys.revoke(issued[0]!)
        expect(yield* allPages((request) => keys.list(account!.id, request), 2)).toEqual([
          [issued[2], issued[1]],
          [issued[0]]
        ])
        const all = yield* keys.list(account!.id, { limit: 3 })
        expect(all.next).toBeNull()
        expect(all.items[2]).toEqual(revoked)
        expect(all.items.map((key) => key.scopes)).toEqual([["agents"], ["monitoring"], ["chat"]])
        expect((yield* Effect.flip(keys.list("acct_missing", { limit: 1 })))._tag).toBe("NotFound")
      }))

    it.effect("lets the bootstrap operator key in with the admin scope and no account", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        expect(yield* keys.authenticate(ADMIN_KEY)).toMatchObject({ accountId: null, scopes: ["admin"] })
      }))
  })
