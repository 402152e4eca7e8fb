/**
 * Privacy classes (spec 1.6, 2.3, 2.4): their order, what each promises, and
 * the block every billable chat completion carries to say which one served it.
 */
import type { PrivacyClass } from "./Config.ts"

/** Weakest first. */
export const CLASS_RANK: ReadonlyArray<PrivacyClass> = [
  "standard_route",
  "protected_provider_route",
  "private_gateway_route",
  "confidential_runtime_route"
]

export const rankOf = (privacyClass: PrivacyClass) => CLASS_RANK.indexOf(privacyClass)

export const strongest = (classes: Iterable<PrivacyClass>): PrivacyClass | undefined => {
  let best: PrivacyClass | undefined
  for (const privacyClass of classes) if (best === undefined || rankOf(privacyClass) > rankOf(best)) best = privacyClass
  return best
}

export const LABELS: Record<PrivacyClass, string> = {
  standard_route: "Standard route",
  protected_provider_route: "Protected provider route",
  private_gateway_route: "Private gateway route",
  confidential_runtime_route: "Confidential runtime route"
}

export const GUARANTEES: Record<PrivacyClass, string> = {
  standard_route:
    "Served by a provider under its own data policy; the gateway does not store or log prompt or completion text.",
  protected_provider_route:
    "Served by a provider that does not store, log or train on prompts; the gateway does not store or log prompt or completion text.",
  private_gateway_route:
    "Served on infrastructure the operator controls, which does not store, log or train on prompts; the gateway does not store or log prompt or completion text.",
  confidential_runtime_route:
    "Served in a confidential-compute runtime whose attestation was verified and fresh for this call; the gateway does not store or log prompt or completion text."
}

/** The response's `privacy` object (spec 2.4). */
export interface PrivacyBlock {
  readonly class: PrivacyClass
  readonly label: string
  readonly svc_stores_prompts: boolean
  readonly svc_logs_prompts: boolean
  readonly training_on_prompts: boolean
  readonly upstream_disclosed: false
  readonly guarantee: string
}

/** The standard class's guarantee when the operator keeps its text (services/Transcripts.ts). */
const keptGuarantee = (days: number) =>
  `Served by a provider under its own data policy; the gateway stores prompt and completion text for ${days} ` +
  "days, readable by your account at GET /v1/receipts/{id}/transcript, and does not log it."

/**
 * The block for a call served at `privacyClass` by a deployment whose provider does (or may)
 * train on prompts. The gateway never logs prompt text; it stores it only for a standard call
 * when the operator turned prompt storage on (`keptForDays`).
 */
export const privacyBlock = (
  privacyClass: PrivacyClass,
  providerTrains: boolean,
  keptForDays?: number
): PrivacyBlock => ({
  class: privacyClass,
  label: LABELS[privacyClass],
  svc_stores_prompts: keptForDays !== undefined,
  svc_logs_prompts: false,
  // Above standard a deployment earns its class only when it does not train.
  training_on_prompts: privacyClass === "standard_route" ? providerTrains : false,
  upstream_disclosed: false,
  guarantee: keptForDays !== undefined ? keptGuarantee(keptForDays) : GUARANTEES[privacyClass]
})
