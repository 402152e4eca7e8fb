/**
 * Kept idempotent responses are sealed: AES-256-GCM under a key derived from
 * the request itself (which the gateway does not store; it keeps only a
 * differently derived hash to compare retries). Only a retry carrying the same
 * request can open its response, and the database holds no completion text.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"

const IV_BYTES = 12
const TAG_BYTES = 16

/** `iv | tag | ciphertext`, base64. */
export const seal = (key: Uint8Array, plaintext: string): string => {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv("aes-256-gcm", key, iv)
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64")
}

/** The plaintext, or undefined when the key does not open it. */
export const open = (key: Uint8Array, sealed: string): string | undefined => {
  const bytes = Buffer.from(sealed, "base64")
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES))
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8")
  } catch {
    return undefined
  }
}
