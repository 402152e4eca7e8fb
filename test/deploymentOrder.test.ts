/**
 * The order a model's deployments are tried in (layers/routing/deploymentOrder.ts):
 * open circuits left out, the cheapest upstream first, equal costs in a
 * weighted random order; a model's only deployment is tried unless its
 * circuit is open.
 */
import { describe, expect, it } from "vitest"
import { orderDeployments } from "../layers/routing/deploymentOrder.ts"
import type { Deployment } from "../services/Catalogue.ts"
import type { BreakerState, Health } from "../services/Health.ts"

const deployment = (id: string, weight = 1) => ({ id, weight }) as unknown as Deployment

/** A health whose only word is each deployment's breaker state (closed unless named). */
const healthWith = (states: Record<string, BreakerState> = {}) =>
  ({ view: (id: string) => ({ deployment: id, state: states[id] ?? "closed" }) }) as unknown as Health["Type"]

const ids = (deployments: ReadonlyArray<Deployment>) => deployments.map((d) => d.id)

describe("orderDeployments", () => {
  it("tries a model's only deployment unless its circuit is open", () => {
    const only = [deployment("p/0")]
    expect(ids(orderDeployments(only, () => 5n, healthWith()))).toEqual(["p/0"])
    expect(ids(orderDeployments(only, () => 5n, healthWith({ "p/0": "half_open" })))).toEqual(["p/0"])
    expect(orderDeployments(only, () => 5n, healthWith({ "p/0": "open" }))).toEqual([])
  })

  it("puts the cheapest upstream first and leaves open circuits out", () => {
    const cost: Record<string, bigint> = { "a/0": 30n, "b/0": 10n, "c/0": 20n, "d/0": 5n }
    const ordered = orderDeployments(
      ["a/0", "b/0", "c/0", "d/0"].map((id) => deployment(id)),
      (d) => cost[d.id]!,
      healthWith({ "d/0": "open" })
    )
    expect(ids(ordered)).toEqual(["b/0", "c/0", "a/0"])
  })

  it("orders deployments of equal cost by their weights' draw, after the cheaper ones", () => {
    const draws = [0.9, 0.1, 0.5]
    let next = 0
    const ordered = orderDeployments(
      [deployment("x/0", 1), deployment("y/0", 1), deployment("z/0", 1), deployment("cheap/0")],
      (d) => (d.id === "cheap/0" ? 1n : 7n),
      healthWith(),
      () => draws[next++]!
    )
    // Keys are u^(1/w): with equal weights the largest draw goes first.
    expect(ids(ordered)).toEqual(["cheap/0", "x/0", "z/0", "y/0"])
  })
})
