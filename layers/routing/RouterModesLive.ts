/**
 * The router modes in force: every shipped mode registered with its options
 * from `routing.modes` (services/Router.ts `registerStrategy`), then a check
 * that the config names no mode the gateway does not have. Either mistake
 * stops the start with a `ConfigInvalid` naming the field.
 */
import { Effect, Layer } from "effect"
import { RouterModes } from "../../plugins/router/index.ts"
import { AppConfig, ConfigInvalid } from "../../services/Config.ts"
import { RouterStrategies } from "../../services/Router.ts"
import { RouterStrategiesLive } from "./RouterStrategiesLive.ts"

/** Refuses options for a mode no plugin registered (a typo such as `routing.modes.fastest`). */
const KnownModesOnly = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const modes = yield* RouterStrategies
  const known = modes.ids()
  for (const id of Object.keys(config.file.routing.modes)) {
    if (!known.includes(id)) {
      return yield* new ConfigInvalid({
        field: `routing.modes.${id}`,
        reason: `unknown router mode "${id}" (known: ${known.join(", ")})`
      })
    }
  }
}))

export const RouterModesLive = KnownModesOnly.pipe(
  Layer.provideMerge(RouterModes),
  Layer.provideMerge(RouterStrategiesLive)
)
