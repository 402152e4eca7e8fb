/**
 * What every ApiKeys layer shares: the key format (`svc_live_` + 40 base62
 * characters), its SHA-256 (the only form stored), the bootstrap operator
 * principal, and the one answer for every rejected key.
 */
import { hash, randomInt } from "node:crypto"
import { Unauthorized } from "../../services/ApiError.ts"
import type { Principal } from "../../services/ApiKeys.ts"

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const SECRET_LENGTH = 40

/** A token that could be a key; anything else is refused without a lookup. */
export const KEY_SHAPE = /^svc_(live|test)_[0-9A-Za-z]{32,}$/

/** Characters of a key kept to recognise it in a list. */
export const HINT_LENGTH = 13

const randomSecret = () => {
  let secret = ""
  for (let i = 0; i < SECRET_LENGTH; i++) secret += BASE62[randomInt(BASE62.length)]
  return secret
}

export const newKey = () => `svc_live_${randomSecret()}`

/** The stored operator key's prefix: a token with it is looked up as the operator key only. */
export const OPERATOR_PREFIX = "svc_admin_"

export const newOperatorKey = () => `${OPERATOR_PREFIX}${randomSecret()}`

/** One-shot (`crypto.hash`): no Hash object per call. */
export const sha256 = (text: string): Buffer => hash("sha256", text, "buffer")

/**
 * The SHA-256 as base64 text, how every request's key is looked up: `crypto.hash` answers text
 * ~4× faster than a `Buffer` on this Node (docs/performance.md, item 91).
 */
export const sha256Base64 = (text: string): string => hash("sha256", text, "base64")

/** Two digests in base64 compared in time independent of where they differ. */
export const sameDigest = (a: string, b: string): boolean => {
  if (a.length !== b.length) return false
  let difference = 0
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return difference === 0
}

/** The one answer for every rejected key, so callers learn nothing about why. */
export const rejected = new Unauthorized({ message: "The API key is missing, invalid or revoked." })

/** The operator: `SVC_ADMIN_KEY` or the stored operator key; admin scope, no account. */
export const bootstrapPrincipal: Principal = { keyId: "key_bootstrap", accountId: null, scopes: ["admin"] }
