/**
 * A request whose JSON body is read through the shape rules
 * (`jsonShape.ts`): HttpApi reads the payload with `request.json` after the
 * key was authenticated, so the rules cost an unauthenticated caller
 * nothing; a body that breaks one is 400 `invalid_request` naming the field.
 */
import type { HttpServerRequest } from "@effect/platform"
import { Effect, Exit } from "effect"
import { InvalidRequest } from "../../services/ApiError.ts"
import { quote } from "../../services/quote.ts"
import { type ShapeLimits, shapeFault } from "./jsonShape.ts"

/**
 * Schema's unions read a discriminator with `String(value)`, which throws for an object with its own
 * `toString` key (`{"role": {"toString": 1}}`), a defect that would be a 500. Such objects (rare: only
 * bodies that spell the key are revived) get a prototype that turns them into a string safely, so the
 * decoder refuses them like any other wrong type.
 */
const PRINTABLE = Object.create(Object.prototype, { [Symbol.toPrimitive]: { value: () => "[object]" } })
const printable = (_: string, value: unknown) =>
  value !== null && typeof value === "object" && !Array.isArray(value) && Object.hasOwn(value, "toString")
    ? Object.setPrototypeOf(value, PRINTABLE)
    : value

/** Parsed now, its answer an Exit: every JSON call reads its body here, with no step of its own (services/atOnce.ts). */
const parsed = (text: string): Exit.Exit<unknown, InvalidRequest> => {
  try {
    return Exit.succeed(text === "" ? null : text.includes("\"toString\"") ? JSON.parse(text, printable) : JSON.parse(text))
  } catch (error) {
    return Exit.fail(new InvalidRequest({ message: `The body is not valid JSON: ${quote(String((error as Error).message), 120)}` }))
  }
}

/** A body's text parsed as JSON once it passed the shape rules of `limits`, at once. */
export const checkedJson = (text: string, limits: ShapeLimits): Exit.Exit<unknown, InvalidRequest> => {
  const fault = shapeFault(text, limits)
  return fault === undefined ? parsed(text) : Exit.fail(new InvalidRequest(fault))
}

/** `request` with its `json` checked against `limits` before it is parsed. */
export const withCheckedJson = (request: HttpServerRequest.HttpServerRequest, limits: ShapeLimits) => {
  const json = Effect.flatMap(request.text, (text) => checkedJson(text, limits))
  // `json` is a getter on the request's prototype; an own property on a derived object replaces it.
  return Object.create(request, { json: { value: json } }) as HttpServerRequest.HttpServerRequest
}
