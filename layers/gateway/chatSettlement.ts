/**
 * The end of a served chat call: its usage (the upstream's, else our own
 * count; Billing checks it against the estimate held for the served model),
 * the bill settled from the hold with the call's events and verdict, its
 * real tokens counted against the key's tpm, and the call's text kept when
 * its class and the operator's setting say so.
 */
import { Effect, Exit } from "effect"
import type { AdmittedChat } from "../../services/Admission.ts"
import { type AfterAnswer, atOnce, type Billing, type Hold, isPending, type Settlement } from "../../services/Billing.ts"
import type { CallRecorder } from "../../services/CallRecorder.ts"
import type { Usage } from "../../services/Chat.ts"
import type { Model } from "../../services/Catalogue.ts"
import { isDatabaseOutage } from "../../services/DatabaseStatus.ts"
import type { Attempt, LineItem } from "../../services/Ledger.ts"
import type { Pricing, TokenUsage } from "../../services/Pricing.ts"
import type { UpstreamCompletion } from "../../services/Providers.ts"
import type { Route, Target } from "../../services/RoutePlanner.ts"
import type { TranscriptCompletion, Transcripts } from "../../services/Transcripts.ts"
import type { Answered, AttemptLog } from "../../services/Upstream.ts"
import { mapAtOnce, thenAtOnce } from "../../services/atOnce.ts"
import { billableUsage } from "../billing/usageCheck.ts"
import type { StageFiber } from "../telemetry/stageSpan.ts"

/** What a call's receipt says beyond the chat call itself: its endpoint, and steps billed before it. */
export interface BillOptions {
  readonly endpoint: string
  readonly before?: ReadonlyArray<LineItem>
}

const CHAT: BillOptions = { endpoint: "/v1/chat/completions" }

export const fromUsage = (usage: Usage): TokenUsage => ({
  inputTokens: usage.prompt_tokens,
  outputTokens: usage.completion_tokens
})

/**
 * The usage a call was held for on the route that served it (counted input, the output its
 * target reserved, which the planner took from the same estimate): billed when a reported one
 * cannot be right.
 */
export const estimatedUsage = (admitted: AdmittedChat, target: Target): TokenUsage => ({
  inputTokens: admitted.inputTokens,
  outputTokens: target.outputTokens
})

/** The usage to tell a streaming caller: the upstream's, or what will be billed when that cannot be right. */
export const toldUsage = (estimated: TokenUsage, model: Model) => (reported: Usage): Usage => {
  const { invalid, usage } = billableUsage(fromUsage(reported), estimated, model.context, model.id)
  return invalid === undefined
    ? reported
    : { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens }
}

/** The usage to answer with: the upstream's, unless billing set it aside as impossible (then what was billed). */
export const billedUsage = (reported: Usage, receipt: Settlement): Usage =>
  reported.prompt_tokens === receipt.usage.inputTokens && reported.completion_tokens === receipt.usage.outputTokens
    ? reported
    : {
      prompt_tokens: receipt.usage.inputTokens,
      completion_tokens: receipt.usage.outputTokens,
      total_tokens: receipt.usage.inputTokens + receipt.usage.outputTokens
    }

/** What a kept transcript holds of a completion: its first choice's answer. */
export const completionText = (completion: UpstreamCompletion): TranscriptCompletion => {
  const message = completion.choices[0]?.message
  return {
    content: message?.content ?? null,
    ...(message?.tool_calls !== undefined && message.tool_calls.length > 0 ? { tool_calls: message.tool_calls } : {})
  }
}

/** Usage by our own count, for an upstream that reported none. */
export const countedUsage = (pricing: Pricing["Type"], inputTokens: number, completion: UpstreamCompletion): Usage => {
  let text = ""
  for (const { message } of completion.choices) {
    text += message.content ?? ""
    for (const call of message.tool_calls ?? []) text += call.function.name + call.function.arguments
  }
  const generated = pricing.countText(text)
  return { prompt_tokens: inputTokens, completion_tokens: generated, total_tokens: inputTokens + generated }
}

/** The receipt's view of an attempt (a failure added, not spread in: every call makes one). */
const asAttempt = (log: AttemptLog): Attempt => {
  const attempt: { -readonly [K in keyof Attempt]: Attempt[K] } = {
    model: log.model,
    outcome: log.outcome,
    latencyMs: log.latencyMs,
    deployment: log.deployment
  }
  if (log.failure !== undefined) attempt.failure = log.failure
  return attempt
}

/**
 * Settles a served call: bills it from the hold, then keeps its text when its class allows. The
 * caller's answer does not depend on the text being kept: a call settled into the journal (the
 * database away) keeps none, and a failure to keep it is logged, or, in an outage, left to the
 * one line `DatabaseStatus` writes. Given `later`, the settlement's hand-over and the rate
 * limits' correction go there.
 */
export const settleChat = (
  services: {
    readonly billing: Billing["Type"]
    readonly recorder: CallRecorder["Type"]
    readonly transcripts: Transcripts["Type"]
  },
  call: { readonly admitted: AdmittedChat; readonly route: Route; readonly hold: Hold },
  answered: Answered<unknown>,
  served: { readonly usage: TokenUsage; readonly attempts: ReadonlyArray<AttemptLog>; readonly completion: TranscriptCompletion },
  options: BillOptions = CHAT,
  later: AfterAnswer = atOnce,
  fiber?: StageFiber
): Effect.Effect<Settlement> => {
  const { admitted, hold, route } = call
  const { deployment, model } = answered.target
  const verdict = route.privacy.verdictOf(deployment.id)
  const settled = services.billing.settle(hold, {
    endpoint: options.endpoint,
    ...(options.before !== undefined ? { before: options.before } : {}),
    model,
    deployment,
    usage: served.usage,
    estimated: estimatedUsage(admitted, answered.target),
    attempts: served.attempts.map(asAttempt),
    privacyClass: route.privacy.served,
    events: services.recorder.receiptEvents(route, served.attempts),
    ...(verdict !== undefined ? { attestationVerdicts: [verdict] } : {})
  }, !services.transcripts.keeps(route.privacy.served) ? undefined : (receipt) =>
    isPending(receipt) ? Effect.void : services.transcripts.keep({
      receiptId: receipt.id,
      accountId: receipt.accountId,
      servedClass: route.privacy.served,
      messages: admitted.request.messages,
      completion: served.completion
    }).pipe(
      Effect.catchAllCause((cause) =>
        isDatabaseOutage(cause) ? Effect.void : Effect.logError("transcript not kept", cause)
      )
    ), later, fiber)
  return thenAtOnce(settled, (settlement) => {
    const ticket = admitted.rateLimit
    if (ticket === undefined) return Exit.succeed(settlement)
    return mapAtOnce(later(() => ticket.settle(served.usage.inputTokens + served.usage.outputTokens)), () => settlement)
  })
}
