/**
 * The order in which a model's deployments are tried: those whose expected
 * margin meets the served class's floor and whose circuit is not open; the
 * cheapest upstream first; deployments of equal cost in a weighted random
 * order (config `weight`), so equal routes share the traffic.
 */
import type { Deployment } from "../../services/Catalogue.ts"
import type { Health } from "../../services/Health.ts"
import type { Nanos } from "../../services/Money.ts"

/** Weighted random order (each key is u^(1/w): larger weights tend to come first). */
const weightedShuffle = (deployments: ReadonlyArray<Deployment>, random: () => number) =>
  deployments
    .map((deployment) => ({ deployment, key: Math.pow(random(), 1 / deployment.weight) }))
    .sort((a, b) => b.key - a.key)
    .map((entry) => entry.deployment)

export const orderDeployments = (
  deployments: ReadonlyArray<Deployment>,
  /** Expected upstream cost of this request on a deployment. */
  upstreamCost: (deployment: Deployment) => Nanos,
  health: Health["Type"],
  random: () => number = Math.random
): ReadonlyArray<Deployment> => {
  // A model with one deployment (most models) has nothing to order: no groups, no sort, no shuffle.
  if (deployments.length === 1) return health.view(deployments[0]!.id).state !== "open" ? deployments : []
  const open = deployments.filter((deployment) => health.view(deployment.id).state !== "open")
  const byCost = new Map<Nanos, Array<Deployment>>()
  for (const deployment of open) {
    const cost = upstreamCost(deployment)
    byCost.set(cost, [...(byCost.get(cost) ?? []), deployment])
  }
  return [...byCost.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .flatMap(([, group]) => (group.length === 1 ? group : weightedShuffle(group, random)))
}
