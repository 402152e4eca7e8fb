/**
 * The usage an upstream reports, judged before it is billed. A figure is
 * billable when it is a non-negative integer no larger than the call's
 * ceiling: twice the larger of the model's context and the tokens held for
 * the call (slack for another tokenizer and for prompt caching), and never
 * beyond the receipts' integer columns (2³¹ − 1). Anything else (negative,
 * fractional, NaN, infinite, absurdly large) is an upstream fault: the call
 * is billed as if it had used everything held for it — the counted input and
 * the reserved output at the served model's price — and a
 * `provider.usage_invalid` event records the figures reported. A usage the
 * upstream did not report at all is not a fault: the gateway counts the
 * tokens itself (layers/gateway/chatSettlement.ts).
 */
import type { CallEvent } from "../../services/Ledger.ts"
import type { TokenUsage } from "../../services/Pricing.ts"

/** The largest figure the receipts' `integer` columns hold. */
export const MAX_TOKEN_COUNT = 2_147_483_647

/** How far above the model's context (or the tokens held) a reported figure may go. */
const SLACK = 2

/** A token figure fit to store: a non-negative integer within the receipts' columns. */
export const isTokenCount = (n: unknown): n is number =>
  typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= MAX_TOKEN_COUNT

/** The most tokens either side of a call may report. */
export const usageCeiling = (context: number, held: TokenUsage): number =>
  Math.min(MAX_TOKEN_COUNT, SLACK * Math.max(context, held.inputTokens + held.outputTokens))

/** Why a reported usage cannot be billed, or undefined when it can. */
export const usageProblem = (usage: TokenUsage, ceiling: number): string | undefined => {
  const sides = [["input", usage.inputTokens], ["output", usage.outputTokens]] as const
  for (const [side, n] of sides) {
    if (typeof n !== "number" || !Number.isInteger(n)) return `${side} tokens are not an integer`
    if (n < 0) return `${side} tokens are negative`
    if (n > ceiling) return `${side} tokens exceed ${ceiling}`
  }
  return undefined
}

/** What a call is billed on: the usage reported when it passes, else the usage held and the event that says why. */
export const billableUsage = (
  reported: TokenUsage,
  held: TokenUsage,
  context: number,
  model: string
): { readonly usage: TokenUsage; readonly invalid?: CallEvent } => {
  const problem = usageProblem(reported, usageCeiling(context, held))
  if (problem === undefined) return { usage: reported }
  return {
    usage: held,
    invalid: {
      type: "provider.usage_invalid",
      data: {
        model,
        problem,
        // As text: NaN and numbers past 2⁵³ do not survive JSON as themselves.
        reported_input_tokens: String(reported.inputTokens),
        reported_output_tokens: String(reported.outputTokens),
        billed_input_tokens: held.inputTokens,
        billed_output_tokens: held.outputTokens
      }
    }
  }
}
