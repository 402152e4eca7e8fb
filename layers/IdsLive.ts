/** Identifiers from the system's CSPRNG: 128 random bits, base64url. */
import { randomBytes } from "node:crypto"
import { Layer } from "effect"
import { type IdPrefix, Ids } from "../services/Ids.ts"

const random = () => randomBytes(16).toString("base64url")

/** A fresh identifier with the given prefix; for places outside any Layer (the HTTP edge). */
export const randomId = (prefix: IdPrefix) => `${prefix}_${random()}`

export const IdsLive = Layer.succeed(Ids, {
  make: randomId,
  completion: () => `chatcmpl-${random()}`
})
