/** `cheapest`: lowest expected cost for this request (input plus expected output at the model's price). */
import { registerStrategy, type RouterStrategy } from "../../services/Router.ts"
import { NoOptions } from "../../services/Registry.ts"
import { byCostThenQuality } from "./scoring.ts"

export const strategy: RouterStrategy = {
  id: "cheapest",
  options: NoOptions,
  rank: (candidates) => ({ order: [...candidates].sort(byCostThenQuality), reason: "lowest expected cost" })
}

export const CheapestStrategy = registerStrategy(strategy)
