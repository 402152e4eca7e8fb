/** The router-strategy registry: filled by the strategy Layers at start, read on every routed call. */
import { Effect, Layer, Option } from "effect"
import { type RouterStrategy, RouterStrategies } from "../../services/Router.ts"

export const RouterStrategiesLive = Layer.sync(RouterStrategies, () => {
  const strategies = new Map<string, RouterStrategy>()
  return {
    register: (strategy) =>
      Effect.sync(() => {
        if (strategies.has(strategy.id)) throw new Error(`router strategy "${strategy.id}" registered twice`)
        strategies.set(strategy.id, strategy)
      }),
    get: (id) => Option.fromNullable(strategies.get(id))
  }
})
