/**
 * What a request's privacy envelope asks for (spec 2.3): a class (default
 * `standard_route`), or the strongest the model can earn (`bestAvailable`,
 * which wins over `class`), and whether a lower class is acceptable
 * (`allowFallbackToLowerClass`). The legacy `mode` maps `standard` to
 * `standard_route` and `mesh` to `private_gateway_route`.
 */
import { Effect } from "effect"
import { InvalidRequest } from "../../services/ApiError.ts"
import type { ChatRequest } from "../../services/Chat.ts"
import type { PrivacyClass } from "../../services/Config.ts"
import { CLASS_RANK } from "../../services/Privacy.ts"
import type { PrivacyAsk } from "../../services/PrivacyPolicy.ts"
import { quote } from "../../services/quote.ts"

export type { PrivacyAsk }

const LEGACY_MODES: Record<string, PrivacyClass> = {
  standard: "standard_route",
  mesh: "private_gateway_route"
}

const isClass = (value: string): value is PrivacyClass => (CLASS_RANK as ReadonlyArray<string>).includes(value)

export const privacyAskOf = (request: ChatRequest): Effect.Effect<PrivacyAsk, InvalidRequest> => {
  const envelope = request.privacy
  if (envelope === undefined) return Effect.succeed({ requested: "standard_route", allowFallback: false })
  const allowFallback = envelope.allowFallbackToLowerClass === true
  if (envelope.class !== undefined && !isClass(envelope.class)) {
    return Effect.fail(
      new InvalidRequest({
        message: `Unknown privacy class "${quote(envelope.class)}"; one of ${CLASS_RANK.join(", ")}.`,
        param: "privacy.class"
      })
    )
  }
  const legacy = envelope.mode === undefined ? undefined : LEGACY_MODES[envelope.mode]
  if (envelope.mode !== undefined && legacy === undefined) {
    return Effect.fail(
      new InvalidRequest({ message: `Unknown privacy mode "${quote(envelope.mode)}"; one of standard, mesh.`, param: "privacy.mode" })
    )
  }
  if (envelope.class !== undefined && legacy !== undefined && envelope.class !== legacy) {
    return Effect.fail(
      new InvalidRequest({
        message: `privacy.mode "${envelope.mode}" means ${legacy}, which disagrees with privacy.class ${envelope.class}.`,
        param: "privacy.mode"
      })
    )
  }
  if (envelope.bestAvailable === true) return Effect.succeed({ requested: "best_available", allowFallback })
  return Effect.succeed({ requested: (envelope.class as PrivacyClass | undefined) ?? legacy ?? "standard_route", allowFallback })
}
