/** Every router mode the gateway ships. Adding one = one new file + one line here. */
import { Layer } from "effect"
import { AutoStrategy } from "./auto.ts"
import { BestStrategy } from "./best.ts"
import { CheapestStrategy } from "./cheapest.ts"
import { FastStrategy } from "./fast.ts"

export const RouterModes = Layer.mergeAll(
  AutoStrategy,
  CheapestStrategy,
  FastStrategy,
  BestStrategy
)
