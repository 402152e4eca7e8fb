/** `best`: the highest catalogue quality score; equal quality → the cheaper. */
import { registerStrategy, type RouterStrategy } from "../../services/Router.ts"
import { NoOptions } from "../../services/Registry.ts"
import { byCostThenQuality } from "./scoring.ts"

export const strategy: RouterStrategy = {
  id: "best",
  options: NoOptions,
  rank: (candidates) => ({
    order: [...candidates].sort((a, b) => b.model.quality - a.model.quality || byCostThenQuality(a, b)),
    reason: "highest quality"
  })
}

export const BestStrategy = registerStrategy(strategy)
