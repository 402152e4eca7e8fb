/**
 * API keys in memory, for unit tests, checked against the accounts of the
 * `MemoryBank`: the same key format, hash-only storage, events
 * (`key.created`, `key.revoked`), bootstrap operator key and one answer for
 * every rejected key as ApiKeysPg (test/apiKeysContract.test.ts runs one
 * suite on both).
 *
 * Not modelled: constant-time comparison (a map lookup by hash stands in)
 * and the database's clock (times come from `Clock`).
 */
import { Clock, Effect, Layer, Option, Redacted } from "effect"
import { type ApiKeyRecord, ApiKeys } from "../../services/ApiKeys.ts"
import { AppConfig } from "../../services/Config.ts"
import { EventLog } from "../../services/EventLog.ts"
import { Ids } from "../../services/Ids.ts"
import { pageOf } from "../../services/Pagination.ts"
import { MemoryBank } from "../billing/memoryBank.ts"
import { accountNotFound, keyNotFound } from "./accountRefusals.ts"
import { bootstrapPrincipal, HINT_LENGTH, KEY_SHAPE, newKey, newOperatorKey, OPERATOR_PREFIX, rejected, sha256Base64 } from "./apiKeyFormat.ts"

const hashOf = sha256Base64

export const ApiKeysMemory: Layer.Layer<ApiKeys, never, MemoryBank | Ids | EventLog | AppConfig> = Layer.effect(
  ApiKeys,
  Effect.gen(function*() {
    const bank = yield* MemoryBank
    const ids = yield* Ids
    const events = yield* EventLog
    const { adminKey } = yield* AppConfig
    const adminHash = adminKey === undefined ? undefined : hashOf(Redacted.value(adminKey))
    /** Records by id, and ids by key hash. */
    const records = new Map<string, ApiKeyRecord>()
    const byHash = new Map<string, string>()
    /** The stored operator key's hash, once issued. */
    let operatorHash: string | undefined
    /** Accounts' own concurrency caps. */
    const concurrency = new Map<string, number>()

    return ApiKeys.of({
      create: (accountId, input) =>
        Effect.gen(function*() {
          if (!bank.accounts.has(accountId)) {
            return yield* accountNotFound(accountId)
          }
          const key = newKey()
          const record: ApiKeyRecord = {
            id: ids.make("key"),
            accountId,
            name: input.name ?? null,
            hint: key.slice(0, HINT_LENGTH),
            scopes: [...new Set(input.scopes)],
            rpm: input.rpm ?? null,
            tpm: input.tpm ?? null,
            createdAt: new Date(yield* Clock.currentTimeMillis),
            revokedAt: null
          }
          records.set(record.id, record)
          byHash.set(hashOf(key), record.id)
          yield* events.record({ type: "key.created", accountId, data: { key_id: record.id, scopes: record.scopes } })
          return { record, key }
        }),

      revoke: (keyId) =>
        Effect.gen(function*() {
          const found = records.get(keyId)
          if (found === undefined) return yield* keyNotFound(keyId)
          const record = found.revokedAt === null
            ? { ...found, revokedAt: new Date(yield* Clock.currentTimeMillis) }
            : found
          records.set(keyId, record)
          yield* events.record({ type: "key.revoked", accountId: record.accountId, data: { key_id: keyId } })
          return record
        }),

      list: (accountId, request) =>
        Effect.suspend(() =>
          bank.accounts.has(accountId)
            ? Effect.succeed(pageOf([...records.values()].filter((record) => record.accountId === accountId), request))
            : accountNotFound(accountId)
        ),

      setLimits: (keyId, change) =>
        Effect.suspend(() => {
          const found = records.get(keyId)
          if (found === undefined) return keyNotFound(keyId)
          const record = {
            ...found,
            rpm: change.rpm === undefined ? found.rpm : change.rpm,
            tpm: change.tpm === undefined ? found.tpm : change.tpm
          }
          records.set(keyId, record)
          return Effect.succeed(record)
        }),

      setAccountConcurrency: (accountId, cap) =>
        Effect.suspend(() => {
          if (!bank.accounts.has(accountId)) return accountNotFound(accountId)
          if (cap === null) concurrency.delete(accountId)
          else concurrency.set(accountId, cap)
          return Effect.succeed({ accountId, concurrency: cap })
        }),

      issueOperatorKey: (when) =>
        Effect.sync(() => {
          if (when === "first" && operatorHash !== undefined) return Option.none()
          const key = newOperatorKey()
          operatorHash = hashOf(key)
          return Option.some(key)
        }),

      authenticate: (token) =>
        Effect.suspend(() => {
          const hash = hashOf(token)
          if (adminHash !== undefined && hash === adminHash) return Effect.succeed(bootstrapPrincipal)
          if (token.startsWith(OPERATOR_PREFIX)) return hash === operatorHash ? Effect.succeed(bootstrapPrincipal) : Effect.fail(rejected)
          const record = KEY_SHAPE.test(token) ? records.get(byHash.get(hash) ?? "") : undefined
          if (record === undefined || record.revokedAt !== null) return Effect.fail(rejected)
          return Effect.succeed({
            keyId: record.id,
            accountId: record.accountId,
            scopes: record.scopes,
            rpm: record.rpm,
            tpm: record.tpm,
            concurrency: concurrency.get(record.accountId) ?? null
          })
        })
    })
  })
)
