/** A plugin registry in memory: filled by the plugin Layers at start, read afterwards. Same for every kind. */
import { Effect, Layer, Option } from "effect"
import type { Context } from "effect"
import type { Plugin, Registry } from "../../services/Registry.ts"

/** The Live layer of a registry Tag; `kind` names it in the error for a plugin registered twice. */
export const registryLive = <I, P extends Plugin<any>>(tag: Context.Tag<I, Registry<P>>, kind: string) =>
  Layer.sync(tag, () => {
    const plugins = new Map<string, P>()
    return {
      register: (plugin) =>
        Effect.sync(() => {
          if (plugins.has(plugin.id)) throw new Error(`${kind} "${plugin.id}" registered twice`)
          plugins.set(plugin.id, plugin)
        }),
      get: (id) => Option.fromNullable(plugins.get(id)),
      ids: () => [...plugins.keys()]
    }
  })
