/** Identifiers from the system's CSPRNG: 128 random bits, base64url. */
import { randomFillSync } from "node:crypto"
import { Layer } from "effect"
import { type IdPrefix, Ids } from "../../services/Ids.ts"

// One CSPRNG call per 256 ids instead of one per id (ids are made on every billed call).
const pool = Buffer.alloc(16 * 256)
let offset = pool.length

const random = () => {
  if (offset === pool.length) {
    randomFillSync(pool)
    offset = 0
  }
  const id = pool.toString("base64url", offset, offset + 16)
  offset += 16
  return id
}

export const IdsLive = Layer.succeed(Ids, {
  make: (prefix: IdPrefix) => `${prefix}_${random()}`,
  completion: () => `chatcmpl-${random()}`
})
