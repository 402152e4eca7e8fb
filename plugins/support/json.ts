/**
 * Picking fields out of an upstream's JSON by hand (the hot path: no Schema
 * pass). A shape we cannot use throws `Malformed`, which adapters turn into a
 * `protocol` failure with `protocolFailureOf`.
 */
import { Clock, Effect } from "effect"
import { UpstreamFailure } from "../../services/Providers.ts"

export type Json = Record<string, unknown>

export class Malformed extends Error {}

export const fail = (reason: string): never => {
  throw new Malformed(reason)
}

export const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

export const recordOf = (u: unknown, what: string): Json => (isRecord(u) ? u : fail(`${what} is not an object`))

export const arrayOf = (u: unknown, what: string): Array<unknown> => (Array.isArray(u) ? u : fail(`${what} is not an array`))

export const stringOr = <A>(u: unknown, fallback: A): string | A => (typeof u === "string" ? u : fallback)

export const intOr = (u: unknown, fallback: number): number => (Number.isInteger(u) ? (u as number) : fallback)

/** Whether an upstream gave a figure at all (null counts as not given). */
export const given = (u: unknown): boolean => u !== undefined && u !== null

/**
 * A token figure an upstream reported, passed on as it is when it is a number (billing judges
 * it: layers/billing/usageCheck.ts) and as NaN when it is something else, so a malformed figure
 * is seen as one instead of read as "no usage"; `absent` when it was not given.
 */
export const reportedCount = (u: unknown, absent: number = Number.NaN): number =>
  typeof u === "number" ? u : given(u) ? Number.NaN : absent

export const protocolFailure = (detail: string) => new UpstreamFailure({ kind: "protocol", detail })

// Details go to the operators' log, which must hold no prompt or completion text: a JSON parse
// error quotes its input, and upstream error messages echo prompts, so neither is kept.
export const protocolFailureOf = (error: unknown) =>
  protocolFailure(error instanceof Malformed ? error.message : "invalid JSON from upstream")

/** An identifier such as `invalid_request_error` or `429`; free text in these fields could be an echoed prompt. */
const MACHINE_TOKEN = /^[A-Za-z0-9_.:-]{1,64}$/

/**
 * An upstream error object's machine-readable fields (`type`, `code`, `status`, and the first
 * `reason` of its `details`, as Google APIs send them), never its message.
 */
export const errorKindOf = (error: unknown): string => {
  const fields = isRecord(error) ? error : {}
  const machine = (value: unknown) => typeof value === "number" || (typeof value === "string" && MACHINE_TOKEN.test(value))
  const kinds = ["type", "code", "status"].filter((field) => machine(fields[field])).map((field) => `${field}=${String(fields[field])}`)
  const reason = Array.isArray(fields.details)
    ? fields.details.map((detail) => (isRecord(detail) ? detail.reason : undefined)).find(machine)
    : undefined
  if (reason !== undefined) kinds.push(`reason=${String(reason)}`)
  return kinds.join(" ") || "unspecified"
}

/** The time in whole seconds by `clock` (from `Effect.clockWith`, so a TestClock controls it). */
export const secondsOf = (clock: Clock.Clock) => Math.floor(clock.unsafeCurrentTimeMillis() / 1000)

/** The time in whole seconds, read from Effect's `Clock`. */
export const nowSeconds: Effect.Effect<number> = Effect.clockWith((clock) => Effect.succeed(secondsOf(clock)))
