/** The router-strategy registry: filled by the strategy Layers at start, read on every routed call. */
import { RouterStrategies } from "../../services/Router.ts"
import { registryLive } from "../platform/RegistryLive.ts"

export const RouterStrategiesLive = registryLive(RouterStrategies, "router strategy")
