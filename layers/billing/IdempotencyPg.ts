/**
 * Idempotency keys in PostgreSQL: the insert that claims a key is the lock, so two racing retries
 * cannot both run. The kept response is sealed with a key only the same request yields.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { AppConfig } from "../../services/Config.ts"
import { Idempotency, type IdempotencyKey } from "../../services/Idempotency.ts"
import { stillRunning, usedWithAnotherBody } from "./idempotencyRefusals.ts"
import { open, seal } from "./sealedResponse.ts"

interface KeyRow {
  readonly request_sha256: Uint8Array
  readonly status: "running" | "done"
  readonly response_status: number | null
  readonly response_headers: Record<string, string> | null
  /** Sealed (layers/billing/sealedResponse.ts); opened it is the first response's JSON, key order kept. */
  readonly response_body: string | null
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b))

export const IdempotencyPg = Layer.effect(
  Idempotency,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // A key still "running" after a reservation's lease belongs to a process that died: it may be claimed again.
    const { file } = yield* AppConfig
    const abandonedAfter = file.billing.reservationLeaseSeconds
    const where = ({ accountId, key }: IdempotencyKey) => sql`account_id = ${accountId} AND key = ${key}`
    return {
      claim: (claim) =>
        Effect.gen(function*() {
          const claimed = yield* sql`
            INSERT INTO idempotency_keys (account_id, key, request_sha256)
            VALUES (${claim.accountId}, ${claim.key}, ${claim.requestSha256})
            ON CONFLICT (account_id, key) DO UPDATE
              SET request_sha256 = excluded.request_sha256, created_at = now()
              WHERE idempotency_keys.status = 'running'
                AND idempotency_keys.created_at < now() - make_interval(secs => ${abandonedAfter})
            RETURNING key`.pipe(Effect.orDie)
          if (claimed.length > 0) return undefined
          const [row] = yield* sql<KeyRow>`SELECT * FROM idempotency_keys WHERE ${where(claim)}`.pipe(Effect.orDie)
          if (row === undefined || !sameBytes(row.request_sha256, claim.requestSha256)) return yield* usedWithAnotherBody()
          if (row.status === "running") return yield* stillRunning()
          const body = open(claim.responseKey, row.response_body!)
          // Same hash, yet the key does not open it: impossible unless the row was tampered with.
          if (body === undefined) return yield* Effect.dieMessage("a kept idempotent response could not be opened")
          return { status: row.response_status!, headers: row.response_headers ?? {}, body: JSON.parse(body) }
        }),

      complete: (claim, response) =>
        sql`
          UPDATE idempotency_keys
          SET status = 'done', response_status = ${response.status},
              response_headers = ${JSON.stringify(response.headers)}::jsonb,
              response_body = ${seal(claim.responseKey, JSON.stringify(response.body))}
          WHERE ${where(claim)}`.pipe(Effect.asVoid, Effect.orDie),

      forget: (claim) => sql`DELETE FROM idempotency_keys WHERE ${where(claim)}`.pipe(Effect.asVoid, Effect.orDie)
    }
  })
)
