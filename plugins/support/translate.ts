/**
 * Building an upstream's wire body from our neutral request. A part, field or
 * tool choice the upstream has no form for is thrown as `NotTranslatable`
 * while building, and comes out as `RequestNotTranslatable` (nothing is sent,
 * the next route may take it); any other throw is a bug in the translation,
 * reported as a `protocol` failure without the request's text.
 */
import { Effect } from "effect"
import { RequestNotTranslatable, type UpstreamFailure } from "../../services/Providers.ts"
import { protocolFailure } from "./json.ts"

/** Thrown by request builders; `reason` names request fields, never prompt text (callers see it). */
export class NotTranslatable extends Error {}

export const notTranslatable = (reason: string): never => {
  throw new NotTranslatable(reason)
}

/** Runs a request builder, turning its throws into the adapter's failures. */
export const translated = <A>(build: () => A): Effect.Effect<A, RequestNotTranslatable | UpstreamFailure> =>
  Effect.try({
    try: build,
    catch: (error) =>
      error instanceof NotTranslatable
        ? new RequestNotTranslatable({ reason: error.message })
        : protocolFailure(`could not translate the request (${error instanceof Error ? error.name : typeof error})`)
  })
