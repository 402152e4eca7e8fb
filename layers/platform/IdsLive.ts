/**
 * Identifiers: the prefix, the time they were made (milliseconds, 12 hex
 * digits), then 96 bits from the system's CSPRNG, base64url. The time first
 * makes ids of one kind arrive in the order they are made, so the database's
 * indexes on them (primary keys, events by receipt) take each new one at
 * their right-hand end instead of at a random page; hex sorts the same under
 * any collation. The random part alone is what makes an id unguessable
 * (docs/architecture.md, "Identifiers").
 */
import { randomFillSync } from "node:crypto"
import { Effect, Layer } from "effect"
import { type IdPrefix, Ids } from "../../services/Ids.ts"

// One CSPRNG call per 256 ids instead of one per id (ids are made on every billed call).
const RANDOM_BYTES = 12
const pool = Buffer.alloc(RANDOM_BYTES * 256)
let offset = pool.length

const random = () => {
  if (offset === pool.length) {
    randomFillSync(pool)
    offset = 0
  }
  const id = pool.toString("base64url", offset, offset + RANDOM_BYTES)
  offset += RANDOM_BYTES
  return id
}

/** Milliseconds since the epoch in 12 hex digits: in order until the year 10889. */
const hexMillis = (millis: number) => millis.toString(16).padStart(12, "0")

/**
 * `hexMillis`, kept for the millisecond it was made in: a call makes several ids within one, and a
 * time past 2^31 is a double, which `toString(16)` converts on its slow path.
 */
const lastTime = { millis: -1, hex: "" }
const timePart = (millis: number) => {
  if (millis !== lastTime.millis) {
    lastTime.millis = millis
    lastTime.hex = hexMillis(millis)
  }
  return lastTime.hex
}

export const IdsLive = Layer.effect(
  Ids,
  Effect.map(Effect.clock, (clock) => ({
    make: (prefix: IdPrefix) => `${prefix}_${timePart(clock.unsafeCurrentTimeMillis())}${random()}`,
    completion: () => `chatcmpl-${timePart(clock.unsafeCurrentTimeMillis())}${random()}`
  }))
)
