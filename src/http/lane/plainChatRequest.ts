/**
 * A chat request in its common shape, decoded without Effect Schema's
 * interpreter, which cost a JSON call more CPU and memory than its key check
 * (docs/performance.md). Plain means: a model, text messages from the
 * system, developer, user or assistant (a string, or null for an
 * assistant's), and sampling fields of plain values. `plainChatRequest`
 * answers exactly what `Schema.decodeUnknown(ChatRequest)` would (the
 * declared fields in declared order, each message rebuilt without unknown
 * fields, the fields we forward untouched after them), or `undefined` for
 * anything else, which the schema then decodes and words the errors of.
 * test/plainChatRequest.test.ts holds the two to the same answers.
 */
import type { ChatRequest, Message } from "../../../services/Chat.ts"

type Json = Record<string, unknown>

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** A message rebuilt as its schema would: `role`, `content`, then `name` if given; anything else is not plain. */
const plainMessage = (u: unknown): Message | undefined => {
  if (!isObject(u)) return undefined
  const { content, name, role } = u
  let fields = 2
  if (role === "assistant") {
    if (content === undefined) return undefined
    if (content !== null && typeof content !== "string") return undefined
  } else if (role === "system" || role === "developer" || role === "user") {
    if (typeof content !== "string") return undefined
  } else return undefined
  if (name !== undefined) {
    if (typeof name !== "string") return undefined
    fields++
  }
  // Unknown fields would be dropped by the schema; such a message is left to it.
  if (Object.keys(u).length !== fields) return undefined
  return (name === undefined ? { role, content } : { role, content, name }) as Message
}

const nullOr = (u: unknown, check: (u: unknown) => boolean) => u === null || check(u)
const isPositiveInt = (u: unknown) => Number.isSafeInteger(u) && (u as number) > 0
const isBetween = (low: number, high: number) => (u: unknown) => typeof u === "number" && u >= low && u <= high
const isString = (u: unknown) => typeof u === "string"
const isStop = (u: unknown) => typeof u === "string" || (Array.isArray(u) && u.every(isString))
const isStreamOptions = (u: unknown) => {
  if (!isObject(u)) return false
  const keys = Object.keys(u).length
  return keys === 0 || (keys === 1 && typeof u.include_usage === "boolean")
}

/** The schema's fields, in its order, each with what a plain value is (none: not plain, left to the schema). */
const FIELDS: ReadonlyArray<readonly [string, ((u: unknown) => boolean) | undefined]> = [
  ["model", undefined],
  ["messages", undefined],
  ["stream", (u) => typeof u === "boolean"],
  ["stream_options", (u) => nullOr(u, isStreamOptions)],
  ["tools", undefined],
  ["tool_choice", undefined],
  ["response_format", undefined],
  ["max_tokens", (u) => nullOr(u, isPositiveInt)],
  ["max_completion_tokens", (u) => nullOr(u, isPositiveInt)],
  ["temperature", (u) => nullOr(u, isBetween(0, 2))],
  ["top_p", (u) => nullOr(u, isBetween(0, 1))],
  ["n", (u) => u === null || u === 1],
  ["stop", (u) => nullOr(u, isStop)],
  ["seed", (u) => nullOr(u, Number.isSafeInteger)],
  ["user", isString],
  ["models", undefined],
  ["route", undefined],
  ["privacy", undefined]
]
const DECLARED = new Set(FIELDS.map(([name]) => name))

/** Copies of what the schema rebuilds: `stream_options` and a list of stop words. */
const copied = (name: string, value: unknown) =>
  name === "stream_options" && value !== null
    ? (value as Json).include_usage === undefined ? {} : { include_usage: (value as Json).include_usage }
    : name === "stop" && Array.isArray(value)
    ? [...value]
    : value

export const plainChatRequest = (u: unknown): ChatRequest | undefined => {
  if (!isObject(u)) return undefined
  const { messages, model } = u
  if (typeof model !== "string" || model.length === 0 || !Array.isArray(messages)) return undefined
  const decoded: Json = { model, messages: [] }
  const plainMessages = decoded.messages as Array<Message>
  for (const message of messages) {
    const plain = plainMessage(message)
    if (plain === undefined) return undefined
    plainMessages.push(plain)
  }
  for (let i = 2; i < FIELDS.length; i++) {
    const [name, isPlain] = FIELDS[i]!
    const value = u[name]
    if (value === undefined) {
      // Given as `undefined` (never from JSON): the schema keeps the key; left to it.
      if (Object.hasOwn(u, name)) return undefined
      continue
    }
    if (isPlain === undefined || !isPlain(value)) return undefined
    decoded[name] = copied(name, value)
  }
  for (const name of Object.keys(u)) {
    if (DECLARED.has(name)) continue
    // A field named so would set the object's prototype; the schema decides what becomes of it.
    if (name === "__proto__") return undefined
    decoded[name] = u[name]
  }
  return decoded as ChatRequest
}
