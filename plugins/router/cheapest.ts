/** `cheapest`: lowest expected cost for this request (input plus expected output at the model's price). */
import { registerStrategy, type RouterStrategy } from "../../services/Router.ts"
import { NoOptions } from "../../services/Registry.ts"
import { byCostThenQuality } from "./scoring.ts"

export const strategy: RouterStrategy<typeof NoOptions.Type> = {
  id: "cheapest",
  options: NoOptions,
  rank: (candidates) => ({ order: [...candidates].sort(byCostThenQuality), reason: "lowest expected cost", dropped: [] })
}

export const CheapestStrategy = registerStrategy(strategy)
