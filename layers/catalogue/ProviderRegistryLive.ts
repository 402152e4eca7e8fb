/** The plugin registry: filled by the plugin Layers at start, read when the catalogue is built. */
import { Effect, Layer, Option } from "effect"
import { type ProviderPlugin, ProviderRegistry } from "../../services/Providers.ts"

export const ProviderRegistryLive = Layer.sync(ProviderRegistry, () => {
  const plugins = new Map<string, ProviderPlugin>()
  return {
    register: (plugin) =>
      Effect.sync(() => {
        if (plugins.has(plugin.id)) throw new Error(`provider plugin "${plugin.id}" registered twice`)
        plugins.set(plugin.id, plugin)
      }),
    get: (id) => Effect.sync(() => Option.fromNullable(plugins.get(id))),
    ids: Effect.sync(() => [...plugins.keys()])
  }
})

