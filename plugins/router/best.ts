/**
 * `best`: the highest catalogue quality score; equal quality → the cheaper.
 * With `minQuality` set (default 0: none), models of a lower quality are left
 * out, so a failure falls back only to models good enough; the first is kept.
 */
import { Schema } from "effect"
import { registerStrategy, type RouterStrategy } from "../../services/Router.ts"
import { byCostThenQuality, leaveOut } from "./scoring.ts"

export const BestOptions = Schema.Struct({
  /** Models whose catalogue quality is below this are left out (except the best one). */
  minQuality: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 1)), { default: () => 0 })
})
export type BestOptions = typeof BestOptions.Type

export const strategy: RouterStrategy<BestOptions> = {
  id: "best",
  options: BestOptions,
  rank: (candidates, _shape, { minQuality }) => {
    const sorted = [...candidates].sort((a, b) => b.model.quality - a.model.quality || byCostThenQuality(a, b))
    const { dropped, order } = leaveOut(sorted, (candidate) =>
      candidate.model.quality < minQuality ? `quality ${candidate.model.quality} is below ${minQuality}` : undefined)
    return { order, reason: "highest quality", dropped }
  }
}

export const BestStrategy = registerStrategy(strategy)
