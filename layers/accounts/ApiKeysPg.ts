/**
 * API keys in PostgreSQL. Only the SHA-256 of a key is stored (keys carry 190+
 * random bits, so a plain hash is enough); lookups are by hash and the match
 * is confirmed in constant time. Known keys are kept in memory. On the
 * embedded database, which one process owns, every revocation or change of
 * limits passes through this service and drops the account's keys at once; on
 * PostgreSQL, shared by several gateway processes, each change is also
 * announced to the others (keyChanges.ts), and a process keeps keys only
 * while it hears the announcements.
 */
import { timingSafeEqual } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Redacted } from "effect"
import { type ApiKeyRecord, ApiKeys, type Principal, type Scope } from "../../services/ApiKeys.ts"
import { AppConfig } from "../../services/Config.ts"
import { EventLog } from "../../services/EventLog.ts"
import { Ids } from "../../services/Ids.ts"
import { accountNotFound, keyNotFound } from "./accountRefusals.ts"
import { KEY_CHANGES, listenForKeyChanges } from "./keyChanges.ts"
import { pageFromRows, startOf } from "../storage/pageRows.ts"
import {
  bootstrapPrincipal,
  HINT_LENGTH,
  KEY_SHAPE,
  newKey,
  newOperatorKey,
  OPERATOR_PREFIX,
  rejected,
  sameDigest,
  sha256,
  sha256Base64
} from "./apiKeyFormat.ts"

interface KeyRow {
  readonly id: string
  readonly account_id: string
  readonly name: string | null
  readonly hint: string
  readonly secret_sha256: Uint8Array
  readonly scopes: ReadonlyArray<Scope>
  readonly rpm: number | null
  readonly tpm: number | null
  readonly created_at: Date
  readonly revoked_at: Date | null
}

const toRecord = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  accountId: row.account_id,
  name: row.name,
  hint: row.hint,
  scopes: row.scopes,
  rpm: row.rpm,
  tpm: row.tpm,
  createdAt: row.created_at,
  revokedAt: row.revoked_at
})

/** Enough for every live key of a large install; past it the memory starts over. */
const MAX_REMEMBERED_KEYS = 10_000

export const ApiKeysPg = Layer.scoped(
  ApiKeys,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const events = yield* EventLog
    const { adminKey, databaseUrl } = yield* AppConfig
    /** Principals by key hash (base64). */
    const remembered = new Map<string, Principal>()
    /** Counts revocations and limit changes, so a lookup that raced one is not remembered (it may have read the row before). */
    let revocations = 0
    const forgetAccount = (accountId: string) => {
      revocations++
      for (const [hash, principal] of remembered) if (principal.accountId === accountId) remembered.delete(hash)
    }
    const listener = databaseUrl === undefined ? undefined : yield* listenForKeyChanges(databaseUrl, forgetAccount, () => {
      revocations++
      remembered.clear()
    })
    const mayKeep = () => listener === undefined || listener.listening()
    /** Tells the other processes that `accountId`'s keys changed; delivered when the transaction commits. */
    const announce = (accountId: string) =>
      listener === undefined ? Effect.void : sql`SELECT pg_notify(${KEY_CHANGES}, ${accountId})`
    const adminDigest = adminKey === undefined ? undefined : sha256Base64(Redacted.value(adminKey))

    return {
      create: (accountId, input) =>
        Effect.gen(function*() {
          const [account] = yield* sql`SELECT id FROM accounts WHERE id = ${accountId} FOR SHARE`
          if (account === undefined) {
            return yield* Effect.fail(accountNotFound(accountId))
          }
          const key = newKey()
          // Scopes are a closed set of plain words, so the array literal needs no quoting.
          const [row] = yield* sql<KeyRow>`
            INSERT INTO api_keys (id, account_id, name, hint, secret_sha256, scopes, rpm, tpm)
            VALUES (${ids.make("key")}, ${accountId}, ${input.name ?? null}, ${key.slice(0, HINT_LENGTH)}, ${sha256(key)},
                    ${`{${[...new Set(input.scopes)].join(",")}}`}::text[], ${input.rpm ?? null}, ${input.tpm ?? null})
            RETURNING *`
          yield* events.record({ type: "key.created", accountId, data: { key_id: row!.id, scopes: row!.scopes } })
          return { record: toRecord(row!), key }
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die)),

      revoke: (keyId) =>
        Effect.gen(function*() {
          const [row] = yield* sql<KeyRow>`
            UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${keyId} RETURNING *`
          if (row === undefined) return yield* Effect.fail(keyNotFound(keyId))
          yield* events.record({ type: "key.revoked", accountId: row.account_id, data: { key_id: row.id } })
          yield* announce(row.account_id)
          return row
        }).pipe(
          sql.withTransaction,
          Effect.catchTag("SqlError", Effect.die),
          // Forgotten once the revocation is committed: a request from now on reads the revoked row.
          Effect.map((row) => {
            forgetAccount(row.account_id)
            return toRecord(row)
          })
        ),

      list: (accountId, request) =>
        Effect.gen(function*() {
          const [account] = yield* sql`SELECT id FROM accounts WHERE id = ${accountId}`
          if (account === undefined) return yield* Effect.fail(accountNotFound(accountId))
          const start = startOf(request)
          const rows = yield* sql<KeyRow & { created_us: string }>`
            SELECT *, (extract(epoch FROM created_at) * 1000000)::bigint::text AS created_us FROM api_keys
            WHERE account_id = ${accountId}
              AND (created_at, id COLLATE "C") < (${start.at}::timestamptz, ${start.id} COLLATE "C")
            ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT ${request.limit + 1}`
          return pageFromRows(rows, request, toRecord)
        }).pipe(Effect.catchTag("SqlError", Effect.die)),

      setLimits: (keyId, change) =>
        sql<KeyRow>`
          UPDATE api_keys SET
            rpm = CASE WHEN ${change.rpm !== undefined} THEN ${change.rpm ?? null}::integer ELSE rpm END,
            tpm = CASE WHEN ${change.tpm !== undefined} THEN ${change.tpm ?? null}::integer ELSE tpm END
          WHERE id = ${keyId} RETURNING *`.pipe(
          Effect.tap(([row]) => row === undefined ? Effect.void : announce(row.account_id)),
          sql.withTransaction,
          Effect.orDie,
          Effect.flatMap(([row]) => row === undefined ? Effect.fail(keyNotFound(keyId)) : Effect.succeed(row)),
          // The remembered principal carries the old limits: the next request reads the row again.
          Effect.map((row) => {
            forgetAccount(row.account_id)
            return toRecord(row)
          })
        ),

      setAccountConcurrency: (accountId, concurrency) =>
        sql<{ id: string; concurrency: number | null }>`
          UPDATE accounts SET concurrency = ${concurrency}::integer WHERE id = ${accountId} RETURNING id, concurrency`.pipe(
          Effect.tap(([row]) => row === undefined ? Effect.void : announce(row.id)),
          sql.withTransaction,
          Effect.orDie,
          Effect.flatMap(([row]) => row === undefined ? Effect.fail(accountNotFound(accountId)) : Effect.succeed(row)),
          Effect.map((row) => {
            forgetAccount(row.id)
            return { accountId: row.id, concurrency: row.concurrency }
          })
        ),

      issueOperatorKey: (when) =>
        Effect.gen(function*() {
          const key = newOperatorKey()
          const values = sql`(${"operator"}, ${key.slice(0, HINT_LENGTH)}, ${sha256(key)})`
          // The fixed id makes a first issue race-safe: of processes starting together, one inserts.
          const rows = when === "first"
            ? yield* sql`INSERT INTO operator_key (id, hint, secret_sha256) VALUES ${values} ON CONFLICT (id) DO NOTHING RETURNING id`
            : yield* sql`
                INSERT INTO operator_key (id, hint, secret_sha256) VALUES ${values}
                ON CONFLICT (id) DO UPDATE SET hint = excluded.hint, secret_sha256 = excluded.secret_sha256, created_at = now()
                RETURNING id`
          return rows.length === 1 ? Option.some(key) : Option.none()
        }).pipe(Effect.orDie),

      authenticate: (token) => {
        const digest = sha256Base64(token)
        if (adminDigest !== undefined && sameDigest(digest, adminDigest)) return Effect.succeed(bootstrapPrincipal)
        const operator = token.startsWith(OPERATOR_PREFIX)
        const shaped = !operator && KEY_SHAPE.test(token)
        // A key this process keeps answers at once: one step, not a generator, on every call.
        const known = shaped ? remembered.get(digest) : undefined
        if (known !== undefined) return Effect.succeed(known)
        const hash = Buffer.from(digest, "base64")
        return Effect.gen(function*() {
          // Operator calls are rare: the row is read every time, so a replacement counts at once everywhere.
          if (operator) {
            const [row] = yield* sql<{ secret_sha256: Uint8Array }>`SELECT secret_sha256 FROM operator_key`.pipe(Effect.orDie)
            if (row !== undefined && timingSafeEqual(Buffer.from(row.secret_sha256), hash)) return bootstrapPrincipal
            return yield* Effect.fail(rejected)
          }
          if (!shaped) return yield* Effect.fail(rejected)
          const revocationsBefore = revocations
          const [row] = yield* sql<KeyRow & { account_concurrency: number | null }>`
            SELECT k.*, a.concurrency AS account_concurrency
            FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.secret_sha256 = ${hash}`.pipe(Effect.orDie)
          if (row === undefined || row.revoked_at !== null || !timingSafeEqual(Buffer.from(row.secret_sha256), hash)) {
            return yield* Effect.fail(rejected)
          }
          const principal: Principal = {
            keyId: row.id,
            accountId: row.account_id,
            scopes: row.scopes,
            rpm: row.rpm,
            tpm: row.tpm,
            concurrency: row.account_concurrency
          }
          if (mayKeep() && revocations === revocationsBefore) {
            if (remembered.size >= MAX_REMEMBERED_KEYS) remembered.clear()
            remembered.set(digest, principal)
          }
          return principal
        })
      }
    }
  })
)
