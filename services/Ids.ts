/**
 * Identifiers: a prefix (`acct_`, `key_`, `req_`, ...) and 128 random bits,
 * base64url. A service so tests can make ids predictable.
 */
import { Context } from "effect"

export type IdPrefix = "acct" | "key" | "req" | "rcpt" | "evt" | "led" | "lse" | "agt" | "conv" | "msg" | "doc" | "chk"

/** Makes new identifiers. */
export class Ids extends Context.Tag("svc/Ids")<Ids, {
  readonly make: (prefix: IdPrefix) => string
  /** A chat completion id as OpenAI clients expect (`chatcmpl-...`). */
  readonly completion: () => string
}>() {}

