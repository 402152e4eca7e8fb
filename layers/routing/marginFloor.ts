/** The margin floor per privacy class (CONTRACT.md "Billing"): a fraction of the total, in exact integers. */
import { Option } from "effect"
import type { ConfigFile, PrivacyClass } from "../../services/Config.ts"
import { type Nanos, parseUsd } from "../../services/Money.ts"
import type { Cost } from "../../services/Pricing.ts"

const NANO = 1_000_000_000n

/** Floors as fractions of the total, in billionths; an unconfigured class has none. */
export const marginFloors = (configured: ConfigFile["marginFloor"]): Record<PrivacyClass, Nanos> => {
  const floor = (privacyClass: PrivacyClass) =>
    Option.getOrElse(Option.flatMap(Option.fromNullable(configured?.[privacyClass]), parseUsd), () => 0n)
  return {
    standard_route: floor("standard_route"),
    protected_provider_route: floor("protected_provider_route"),
    private_gateway_route: floor("private_gateway_route"),
    confidential_runtime_route: floor("confidential_runtime_route")
  }
}

/** margin / total ≥ floor. */
export const meetsFloor = (cost: Cost, floor: Nanos) => cost.margin * NANO >= floor * cost.total
