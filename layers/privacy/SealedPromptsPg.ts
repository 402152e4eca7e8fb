/**
 * Sealed prompts with the key pairs kept in `prompt_keys` (jose does the JOSE).
 * The first instance to start on a database makes the key; the others use
 * it. Each instance keeps the private keys it has imported; a JWE naming a
 * key it does not know yet makes it read the table again (another instance
 * may have rotated), at most once per second.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, ParseResult, Schema } from "effect"
import {
  calculateJwkThumbprint,
  compactDecrypt,
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK
} from "jose"
import { InvalidRequest } from "../../services/ApiError.ts"
import { Message } from "../../services/Chat.ts"
import { type PublicPromptKey, SealedPrompts } from "../../services/SealedPrompts.ts"

/** How long a retired key still opens prompts sealed to it. */
const RETIRED_GRACE_DAYS = 7
const RELOAD_AT_MOST_EVERY_MS = 1_000

const SealedMessages = Schema.parseJson(Schema.Array(Message).pipe(Schema.minItems(1)))
const decodeMessages = Schema.decodeUnknownEither(SealedMessages, { errors: "first" })

const PARAM = "privacy.encryptedPrompt"
const refuse = (message: string) => new InvalidRequest({ message, param: PARAM })

interface KeyRow {
  readonly kid: string
  readonly public_jwk: PublicPromptKey
  readonly private_jwk: JWK
  readonly current: boolean
}

interface HeldKey {
  readonly publicKey: PublicPromptKey
  readonly privateKey: Awaited<ReturnType<typeof importJWK>>
  readonly current: boolean
}

const newKeyPair = Effect.promise(async () => {
  const { privateKey, publicKey } = await generateKeyPair("ECDH-ES", { crv: "P-256", extractable: true })
  const publicJwk = await exportJWK(publicKey)
  const kid = await calculateJwkThumbprint(publicJwk)
  const published: PublicPromptKey = {
    kty: "EC",
    crv: "P-256",
    x: publicJwk.x!,
    y: publicJwk.y!,
    kid,
    use: "enc",
    alg: "ECDH-ES"
  }
  return { published, privateJwk: await exportJWK(privateKey) }
})

export const SealedPromptsPg = Layer.effect(
  SealedPrompts,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const readKeys = sql<KeyRow>`
      SELECT kid, public_jwk, private_jwk, retired_at IS NULL AS current FROM prompt_keys
      WHERE retired_at IS NULL OR retired_at > now() - make_interval(days => ${RETIRED_GRACE_DAYS})
      ORDER BY retired_at IS NULL DESC, created_at DESC`

    const insertKey = Effect.flatMap(newKeyPair, ({ privateJwk, published }) =>
      sql`
        INSERT INTO prompt_keys (kid, public_jwk, private_jwk)
        VALUES (${published.kid}, ${JSON.stringify(published)}::jsonb, ${JSON.stringify(privateJwk)}::jsonb)
        ON CONFLICT DO NOTHING`)

    /** Adds a current key unless there is one; the unique index lets one of several racing instances win. */
    const ensureCurrent = (rows: ReadonlyArray<KeyRow>) =>
      rows.some((row) => row.current) ? Effect.succeed(rows) : Effect.zipRight(insertKey, readKeys)

    let held = new Map<string, HeldKey>()
    let loadedAt = 0
    const load = Effect.gen(function*() {
      const rows = yield* Effect.flatMap(readKeys, ensureCurrent)
      const next = new Map<string, HeldKey>()
      for (const row of rows) {
        const known = held.get(row.kid)
        const privateKey = known?.privateKey ?? (yield* Effect.promise(() => importJWK(row.private_jwk, "ECDH-ES")))
        // Rebuilt in JWK order: jsonb hands keys back in its own order.
        const { alg, crv, kid, kty, use, x, y } = row.public_jwk
        next.set(row.kid, { publicKey: { kty, crv, x, y, kid, use, alg }, privateKey, current: row.current })
      }
      held = next
      loadedAt = yield* Clock.currentTimeMillis
    }).pipe(Effect.orDie)

    yield* load

    /**
     * The keys that may open a JWE: the one its `kid` names (reading the table again for a kid not
     * seen yet), or, with no `kid`, every key held, the current one first.
     */
    const keysFor = (kid: string | undefined) =>
      Effect.gen(function*() {
        if (kid === undefined) return [...held.values()]
        if (!held.has(kid) && (yield* Clock.currentTimeMillis) - loadedAt > RELOAD_AT_MOST_EVERY_MS) yield* load
        const key = held.get(kid)
        return key === undefined ? [] : [key]
      })

    const decrypt = (jwe: string, key: HeldKey) =>
      Effect.tryPromise({
        try: () =>
          compactDecrypt(jwe, key.privateKey, {
            keyManagementAlgorithms: ["ECDH-ES"],
            contentEncryptionAlgorithms: ["A256GCM"]
          }),
        catch: () =>
          refuse("privacy.encryptedPrompt could not be opened: it was altered, or not sealed to a key from GET /v1/privacy/keys.")
      })

    const open = (jwe: string) =>
      Effect.gen(function*() {
        const header = yield* Effect.try({
          try: () => decodeProtectedHeader(jwe),
          catch: () => refuse("privacy.encryptedPrompt is not a compact JWE.")
        })
        if (header.alg !== "ECDH-ES" || header.enc !== "A256GCM") {
          return yield* refuse(
            `privacy.encryptedPrompt must use alg ECDH-ES and enc A256GCM (got ${String(header.alg)}, ${String(header.enc)}).`
          )
        }
        const kid = typeof header.kid === "string" ? header.kid : undefined
        const [first, ...others] = yield* keysFor(kid)
        if (first === undefined) {
          return yield* refuse(
            `privacy.encryptedPrompt is sealed to key ${kid}, which this gateway does not hold; ` +
              "seal to a key from GET /v1/privacy/keys."
          )
        }
        const { plaintext } = yield* others.reduce(
          (opened, key) => Effect.orElse(opened, () => decrypt(jwe, key)),
          decrypt(jwe, first)
        )
        // The plaintext is the caller's prompt: errors name where it is wrong, never what it says.
        const text = yield* Effect.try({
          try: () => new TextDecoder("utf-8", { fatal: true }).decode(plaintext),
          catch: () => refuse("privacy.encryptedPrompt's plaintext is not UTF-8 text.")
        })
        const decoded = decodeMessages(text)
        if (decoded._tag === "Left") {
          const [issue] = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
          const path = (issue?.path ?? []).map((step) => typeof step === "number" ? `[${step}]` : `.${String(step)}`)
          const where = path.length === 0 ? "" : ` (at messages${path.join("")})`
          return yield* refuse(
            `privacy.encryptedPrompt's plaintext must be a JSON array of one or more chat messages${where}.`
          )
        }
        return decoded.right
      })

    const publicKeys = Effect.map(load, () => [...held.values()].filter((key) => key.current).map((key) => key.publicKey))

    return SealedPrompts.of({
      publicKeys,
      open,
      rotate: sql`UPDATE prompt_keys SET retired_at = now() WHERE retired_at IS NULL`.pipe(
        Effect.zipRight(insertKey),
        sql.withTransaction,
        Effect.orDie,
        Effect.zipRight(publicKeys),
        Effect.map((keys) => keys[0]!)
      )
    })
  })
)
