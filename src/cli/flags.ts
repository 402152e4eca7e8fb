/**
 * The operator CLI's flags checked with the API's own request schemas, and
 * the first problem told as a sentence naming the flag the operator typed
 * (`--credit: expected a decimal USD amount with at most 9 decimal places,
 * got "1.0000000001"`), never in the schema's internal wording.
 */
import { Options } from "@effect/cli"
import { Effect, Option, ParseResult, Schema } from "effect"
import { InvalidRequest } from "../../services/ApiError.ts"
import { clip } from "../../services/quote.ts"

/** The flag an operator typed for each API field, so errors name what they can fix. */
const flagOf: Record<string, string> = {
  name: "--name",
  credit_usd: "--credit",
  scopes: "--scope",
  rpm: "--rpm",
  tpm: "--tpm",
  concurrency: "--concurrency",
  amount_usd: "--amount",
  reference: "--reference",
  limit: "--limit",
  cursor: "--cursor"
}

/** An optional field fails once per alternative; "not absent" and "not null" say nothing to an operator. */
const ABSENT_ALTERNATIVE = /^Expected (undefined|null), actual /
const LITERAL = /^Expected "([^"]*)", actual /
const EXPECTED = /^Expected (.+?), actual /s

/** Schema's words for a kind of value, as an operator reads them. */
const plainKind = (kind: string) =>
  kind === "number" || kind === "an integer"
    ? "a whole number"
    : kind.replace(/^(\d+) to (\d+)$/, "a whole number from $1 to $2")
      .replace("a string at least 1 character(s) long", "a value that is not empty")
      .replace("an array of at least 1 item(s)", "at least one value")
      .replaceAll("(s)", "s")

/** What the operator gave, unless there is nothing to show (a flag not given at all). */
const shown = (value: unknown) =>
  value === undefined || (Array.isArray(value) && value.length === 0) ? "" : `, got ${clip(JSON.stringify(value), 80)}`

const valueAt = (input: unknown, path: ReadonlyArray<PropertyKey>) =>
  path.reduce<unknown>((node, key) => (node as Record<PropertyKey, unknown> | undefined)?.[key], input)

/** One sentence for the messages Schema gave for one field. */
export const reasonOf = (messages: ReadonlyArray<string>, value: unknown): string => {
  const meaningful = messages.filter((message) => !ABSENT_ALTERNATIVE.test(message))
  const literals = meaningful.map((message) => LITERAL.exec(message)?.[1]).filter((literal) => literal !== undefined)
  if (literals.length > 1 && literals.length === meaningful.length) {
    return `expected one of ${literals.join(", ")}${shown(value)}`
  }
  const first = meaningful[0] ?? messages[0] ?? "is not valid"
  const expected = EXPECTED.exec(first)
  return expected === null ? `${first}${shown(value)}` : `expected ${plainKind(expected[1]!)}${shown(value)}`
}

/** Decodes the flags with the API's request schema; the first problem becomes an `InvalidRequest` naming its flag. */
export const decodeFlags = <A, I>(schema: Schema.Schema<A, I>, input: { readonly [K in keyof I]-?: unknown }) =>
  Effect.mapError(Schema.decodeUnknown(schema, { errors: "first" })(input), (error) => {
    const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
    const path = issues[0]?.path ?? []
    const field = String(path[0] ?? "")
    // A union (such as a scope, or an optional field) fails once per member: together they say what is allowed.
    const messages = issues.filter((issue) => String(issue.path) === String(path)).map((issue) => issue.message)
    return new InvalidRequest({ message: `${flagOf[field] ?? field}: ${reasonOf(messages, valueAt(input, path))}`, param: field })
  })

/** A whole-number flag read as text, so the schema (not the parser) judges it and says what is wrong. */
export const numberOrText = (text: string): number | string => /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text

/** A rate-limit flag: `none` clears the limit, anything else must be a whole number. */
export const limitFlag = (name: "rpm" | "tpm", what: string) =>
  Options.text(name).pipe(Options.withPseudoName("n|none"), Options.withDescription(`${what}, or "none" to remove the key's own limit`), Options.optional)

export const limitValue = (flag: Option.Option<string>) =>
  Option.match(flag, { onNone: () => undefined, onSome: (text) => text === "none" ? null : numberOrText(text) })

/** `--limit` and `--cursor` of the list commands, decoded by `ListParams`. */
export const pageFlags = {
  limit: Options.text("limit").pipe(Options.withPseudoName("n"), Options.withDescription("Items per page, 1 to 1000 (default 100)"), Options.optional),
  cursor: Options.text("cursor").pipe(
    Options.withPseudoName("cursor"),
    Options.withDescription("next_cursor of the previous page, to list the page after it"),
    Options.optional
  )
}
