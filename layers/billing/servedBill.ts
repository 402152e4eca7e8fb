/**
 * The bill of a served call: its cost at the model's price for the usage
 * billed (the usage reported when it can be right, else the estimate held:
 * usageCheck.ts), with the line items of the steps billed before it, its
 * attempts, events and attestation verdicts, as the ledger writes it.
 */
import { Effect } from "effect"
import type { ServedCall } from "../../services/Billing.ts"
import type { Bill } from "../../services/Ledger.ts"
import { type Pricing, sumOfCosts } from "../../services/Pricing.ts"
import { billableUsage } from "./usageCheck.ts"

const billOfCost = (
  call: ServedCall,
  keyId: string,
  usage: ServedCall["usage"],
  invalid: Bill["events"],
  cost: Bill["cost"]
): Bill => ({
  endpoint: call.endpoint,
  model: call.model.id,
  tier: call.model.tier,
  privacyClass: call.privacyClass,
  usage,
  price: call.model.pricing,
  cost,
  attempts: call.attempts,
  providerId: call.deployment.provider.id,
  events: invalid === undefined || invalid.length === 0 ? call.events ?? [] : [...(call.events ?? []), ...invalid],
  ...(call.attestationVerdicts !== undefined ? { attestationVerdicts: call.attestationVerdicts } : {}),
  keyId
})

const billOf = (pricing: Pricing["Type"], call: ServedCall, keyId: string, usage: ServedCall["usage"], invalid: Bill["events"]): Bill => {
  const cost = pricing.cost(call.model, call.deployment, usage)
  if (call.before === undefined) return billOfCost(call, keyId, usage, invalid, cost)
  const lineItems = [...call.before, { step: "generation" as const, model: call.model.id, usage, cost }]
  return { ...billOfCost(call, keyId, usage, invalid, sumOfCosts(lineItems.map((item) => item.cost))), lineItems }
}

/**
 * The bill of a served call by the hold's key, at the usage reported if it is billable, else at the
 * estimate, with the warning for operators to log first.
 */
export const checkedBill = (pricing: Pricing["Type"], call: ServedCall, keyId: string) => {
  const { invalid, usage } = billableUsage(call.usage, call.estimated, call.model.context, call.model.id)
  const bill = billOf(pricing, call, keyId, usage, invalid === undefined ? undefined : [invalid])
  const warning = invalid === undefined ? undefined : Effect.logWarning(
    "upstream reported a usage that cannot be billed; billed the estimate held"
  ).pipe(Effect.annotateLogs({ deployment: call.deployment.id, ...invalid.data }))
  return { bill, warning }
}
