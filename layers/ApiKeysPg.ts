/**
 * API keys in PostgreSQL. Only the SHA-256 of a key is stored (keys carry 190+
 * random bits, so a plain hash is enough); lookups are by hash and the match
 * is confirmed in constant time. Every request reads the key row, so a
 * revocation counts from the very next request on every gateway instance.
 */
import { createHash, randomInt, timingSafeEqual } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted } from "effect"
import { NotFound, Unauthorized } from "../services/ApiError.ts"
import { type ApiKeyRecord, ApiKeys, type Principal, type Scope } from "../services/ApiKeys.ts"
import { AppConfig } from "../services/Config.ts"
import { EventLog } from "../services/EventLog.ts"
import { Ids } from "../services/Ids.ts"

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

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const SECRET_LENGTH = 40
const KEY_SHAPE = /^svc_(live|test)_[0-9A-Za-z]{32,}$/

const newKey = () => {
  let secret = ""
  for (let i = 0; i < SECRET_LENGTH; i++) secret += BASE62[randomInt(BASE62.length)]
  return `svc_live_${secret}`
}

const sha256 = (text: string) => createHash("sha256").update(text).digest()

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

/** The one answer for every rejected key, so callers learn nothing about why. */
const rejected = new Unauthorized({ message: "The API key is missing, invalid or revoked." })

/** The bootstrap operator key from `SVC_ADMIN_KEY`: admin scope, no account. */
const BOOTSTRAP_KEY_ID = "key_bootstrap"

export const ApiKeysPg = Layer.effect(
  ApiKeys,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const events = yield* EventLog
    const { adminKey } = yield* AppConfig
    const adminHash = adminKey === undefined ? undefined : sha256(Redacted.value(adminKey))
    const bootstrap: Principal = { keyId: BOOTSTRAP_KEY_ID, accountId: null, scopes: ["admin"] }

    return {
      create: (accountId, input) =>
        Effect.gen(function*() {
          const [account] = yield* sql`SELECT id FROM accounts WHERE id = ${accountId} FOR SHARE`
          if (account === undefined) {
            return yield* Effect.fail(new NotFound({ message: `No account ${accountId}.`, param: "id" }))
          }
          const key = newKey()
          // Scopes are a closed set of plain words, so the array literal needs no quoting.
          const [row] = yield* sql<KeyRow>`
            INSERT INTO api_keys (id, account_id, name, hint, secret_sha256, scopes, rpm, tpm)
            VALUES (${ids.make("key")}, ${accountId}, ${input.name ?? null}, ${key.slice(0, 13)}, ${sha256(key)},
                    ${`{${[...new Set(input.scopes)].join(",")}}`}::text[], ${input.rpm ?? null}, ${input.tpm ?? null})
            RETURNING *`
          yield* events.record({ type: "key.created", accountId, data: { key_id: row!.id, scopes: row!.scopes } })
          return { record: toRecord(row!), key }
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die)),

      revoke: (keyId) =>
        Effect.gen(function*() {
          const [row] = yield* sql<KeyRow>`
            UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${keyId} RETURNING *`
          if (row === undefined) return yield* Effect.fail(new NotFound({ message: `No API key ${keyId}.`, param: "id" }))
          yield* events.record({ type: "key.revoked", accountId: row.account_id, data: { key_id: row.id } })
          return toRecord(row)
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die)),

      authenticate: (token) =>
        Effect.gen(function*() {
          const hash = sha256(token)
          if (adminHash !== undefined && timingSafeEqual(hash, adminHash)) return bootstrap
          if (!KEY_SHAPE.test(token)) return yield* Effect.fail(rejected)
          const [row] = yield* sql<KeyRow>`SELECT * FROM api_keys WHERE secret_sha256 = ${hash}`.pipe(Effect.orDie)
          if (row === undefined || row.revoked_at !== null || !timingSafeEqual(Buffer.from(row.secret_sha256), hash)) {
            return yield* Effect.fail(rejected)
          }
          return { keyId: row.id, accountId: row.account_id, scopes: row.scopes }
        })
    }
  })
)
