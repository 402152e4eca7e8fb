/**
 * Which class a call is promised. The one asked for when some planned model
 * earns it; for `bestAvailable`, the strongest the first model earns; when no
 * planned model earns the class asked for, the strongest the first model
 * earns if the caller allowed a fallback, else a refusal. The call is then
 * served only by deployments that earn the promised class.
 */
import type { PrivacyClass } from "../../services/Config.ts"
import { strongest } from "../../services/Privacy.ts"
import type { PrivacyAsk } from "./privacyAsk.ts"

export type ClassChoice =
  | { readonly _tag: "Serve"; readonly requested: PrivacyClass; readonly served: PrivacyClass; readonly downgraded: boolean }
  | { readonly _tag: "Refuse"; readonly requested: PrivacyClass }

/**
 * `earnable[i]`: the classes the i-th planned model earns (`Model.privacyClasses`); the first is
 * the one asked for (never empty: standard).
 */
export const chooseClass = (ask: PrivacyAsk, earnable: ReadonlyArray<ReadonlyArray<PrivacyClass>>): ClassChoice => {
  const first = earnable[0]!
  const requested = ask.requested === "best_available" ? strongest(first)! : ask.requested
  if (earnable.some((classes) => classes.includes(requested))) return { _tag: "Serve", requested, served: requested, downgraded: false }
  if (!ask.allowFallback) return { _tag: "Refuse", requested }
  return { _tag: "Serve", requested, served: strongest(first)!, downgraded: true }
}
