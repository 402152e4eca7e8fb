/**
 * Predictable identifiers for tests: the prefix and a counter per prefix
 * (`rcpt_1`, `rcpt_2`, `evt_1`, …; completions `chatcmpl-1`, …). Each build
 * of the layer counts from 1, so a test that builds its own gets the same ids
 * on every run.
 *
 * Not modelled: the real ids' shape (128 random bits, base64url) and their
 * uniqueness across layer builds or processes — two builds sharing one
 * database would make the same ids.
 */
import { Layer } from "effect"
import { type IdPrefix, Ids } from "../../services/Ids.ts"

/** A fresh counter set; `make("rcpt")` answers `rcpt_1`, then `rcpt_2`. */
export const makeIdsTest = (): typeof Ids.Service => {
  const counters = new Map<string, number>()
  const next = (prefix: string) => {
    const n = (counters.get(prefix) ?? 0) + 1
    counters.set(prefix, n)
    return n
  }
  return {
    make: (prefix: IdPrefix) => `${prefix}_${next(prefix)}`,
    completion: () => `chatcmpl-${next("chatcmpl")}`
  }
}

export const IdsTest: Layer.Layer<Ids> = Layer.sync(Ids, makeIdsTest)
