/** Identifiers from the system's CSPRNG: 128 random bits, base64url. */
import { randomBytes } from "node:crypto"
import { Layer } from "effect"
import { type IdPrefix, Ids } from "../services/Ids.ts"

const random = () => randomBytes(16).toString("base64url")

export const IdsLive = Layer.succeed(Ids, {
  make: (prefix: IdPrefix) => `${prefix}_${random()}`,
  completion: () => `chatcmpl-${random()}`
})
