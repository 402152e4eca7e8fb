/**
 * Legacy sealed prompts (CONTRACT.md "Routing and privacy"): a caller may send
 * `privacy.encryptedPrompt`, a compact JWE (ECDH-ES + A256GCM) sealed to the
 * gateway's public key, whose plaintext is the JSON `messages` array. The key
 * set is published at `GET /v1/privacy/keys`; every instance on one database
 * holds the same keys.
 */
import { Context, type Effect, Schema } from "effect"
import type { InvalidRequest } from "./ApiError.ts"
import type { Message } from "./Chat.ts"

/** A public key as published: a JWK for ECDH-ES key agreement; `kid` is its RFC 7638 thumbprint. */
export const PublicPromptKey = Schema.Struct({
  kty: Schema.Literal("EC"),
  crv: Schema.Literal("P-256"),
  x: Schema.String,
  y: Schema.String,
  kid: Schema.String,
  use: Schema.Literal("enc"),
  alg: Schema.Literal("ECDH-ES")
}).annotations({ identifier: "PromptKey" })
export type PublicPromptKey = typeof PublicPromptKey.Type

/** `GET /v1/privacy/keys`: a JWKS with the current key. */
export const PromptKeySet = Schema.Struct({ keys: Schema.Array(PublicPromptKey) }).annotations({
  identifier: "PromptKeySet"
})

export class SealedPrompts extends Context.Tag("svc/SealedPrompts")<SealedPrompts, {
  /** The keys callers may seal to, newest first (a JWKS's `keys`). */
  readonly publicKeys: Effect.Effect<ReadonlyArray<PublicPromptKey>>
  /**
   * The messages sealed in `jwe`. A JWE that is malformed, tampered with, sealed to a key this
   * gateway does not hold, or whose plaintext is not a messages array is a 400 that never echoes
   * the plaintext.
   */
  readonly open: (jwe: string) => Effect.Effect<ReadonlyArray<Message>, InvalidRequest>
  /**
   * Retires the current key and makes a new one, which is published from now on. Prompts sealed
   * to the retired key still open for a grace period (callers may hold the old JWKS).
   */
  readonly rotate: Effect.Effect<PublicPromptKey>
}>() {}
