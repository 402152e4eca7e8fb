/**
 * The end of a served (not streamed) chat completion: the serving attempt's
 * health, the bill settled from the hold, and the completion relabelled for
 * the caller — our id, the catalogue model, the usage as billed and the
 * privacy block of the class that served it. Uninterruptible: an answer that
 * came back is billed. Chat completions and agent runs end the same way; a
 * chat completion gives `later`, so what its answer does not wait for (the
 * attempt's health, the settlement's hand-over, the rate limits' correction)
 * runs once the answer is written.
 */
import { Effect } from "effect"
import type { AdmittedChat } from "../../services/Admission.ts"
import { type AfterAnswer, atOnce, type Hold } from "../../services/Billing.ts"
import type { Ids } from "../../services/Ids.ts"
import type { Pricing } from "../../services/Pricing.ts"
import type { PrivacyPolicy } from "../../services/PrivacyPolicy.ts"
import type { UpstreamCompletion } from "../../services/Providers.ts"
import type { Route } from "../../services/RoutePlanner.ts"
import type { Answered, Upstream } from "../../services/Upstream.ts"
import { isAnswered, mapAtOnce, thenAtOnce } from "../../services/atOnce.ts"
import type { StageFiber } from "../telemetry/stageSpan.ts"
import { isTokenCount } from "../billing/usageCheck.ts"
import { type BillOptions, billedUsage, completionText, countedUsage, fromUsage, settleChat } from "./chatSettlement.ts"

export type CompletionServices = Parameters<typeof settleChat>[0] & {
  readonly upstream: Upstream["Type"]
  readonly pricing: Pricing["Type"]
  readonly privacyPolicy: PrivacyPolicy["Type"]
  readonly ids: Ids["Type"]
}

export const endCompletion = (
  services: CompletionServices,
  call: { readonly admitted: AdmittedChat; readonly route: Route; readonly hold: Hold },
  answered: Answered<UpstreamCompletion>,
  options?: BillOptions,
  later: AfterAnswer = atOnce,
  fiber?: StageFiber
) => {
  const completion = answered.value
  const usage = completion.usage ?? countedUsage(services.pricing, call.admitted.inputTokens, completion)
  const { deployment, model } = answered.target
  const served = later(() =>
    services.upstream.served(answered, {
      ok: true,
      latencyMs: answered.attempts.at(-1)!.latencyMs,
      // A figure billing will set aside says nothing of throughput.
      outputTokens: isTokenCount(usage.completion_tokens) ? usage.completion_tokens : 0
    })
  )
  // A chain that goes on at once where a part answers at once (services/atOnce.ts): every JSON call runs it.
  const ended = thenAtOnce(served, () =>
    mapAtOnce(
      settleChat(services, call, answered, {
        usage: fromUsage(usage),
        attempts: answered.attempts,
        completion: completionText(completion)
      }, options, later, fiber),
      (receipt) => ({
        completion: {
          ...completion,
          id: services.ids.completion(),
          model: model.id,
          usage: billedUsage(usage, receipt),
          privacy: services.privacyPolicy.block(call.route.privacy.served, deployment)
        },
        receipt
      })
    ))
  // An answer that came back is billed: nothing may interrupt its end. One made at once (given the
  // fiber, its settlement queued) is over already: no uninterruptible region around it.
  return isAnswered(ended) ? ended : Effect.uninterruptible(ended)
}
