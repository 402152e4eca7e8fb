/**
 * Route planning (services/RoutePlanner.ts): the request's shape, the models
 * to try (routePlan.ts, ranked by a router mode or as the caller listed
 * them), the class promised (the privacy policy), then per model its
 * deployments that keep the promise and meet the class's margin floor, open
 * circuits left out, cheapest upstream first (deploymentOrder.ts). Reads the
 * catalogue and the in-memory health only.
 */
import { Effect, Layer } from "effect"
import { MarginFloorViolated, UpstreamError } from "../../services/ApiError.ts"
import { Billing } from "../../services/Billing.ts"
import { Catalogue, type Deployment } from "../../services/Catalogue.ts"
import { AppConfig } from "../../services/Config.ts"
import { Health } from "../../services/Health.ts"
import type { Nanos } from "../../services/Money.ts"
import { Pricing } from "../../services/Pricing.ts"
import { type PrivacyDecision, PrivacyPolicy } from "../../services/PrivacyPolicy.ts"
import { type Route, RoutePlanner, type Target } from "../../services/RoutePlanner.ts"
import { RouterStrategies } from "../../services/Router.ts"
import { thenAtOnce } from "../../services/atOnce.ts"
import { candidateOf } from "./candidates.ts"
import { orderDeployments } from "./deploymentOrder.ts"
import { marginFloors, meetsFloor } from "./marginFloor.ts"
import { shapeOf } from "./requestShape.ts"
import { planRoute, type RoutePlan } from "./routePlan.ts"
import { stageOn } from "../telemetry/stageSpan.ts"

/** Output tokens a request is expected to produce when it sets no maximum (for ranking, not for the hold). */
const EXPECTED_OUTPUT_TOKENS = 500

export const RoutePlannerLive = Layer.effect(
  RoutePlanner,
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const health = yield* Health
    const pricing = yield* Pricing
    const billing = yield* Billing
    const strategies = yield* RouterStrategies
    const privacyPolicy = yield* PrivacyPolicy
    const floors = marginFloors((yield* AppConfig).file.marginFloor)

    /**
     * The route of a plan at the class decided: per model its deployments that keep the promise and
     * meet the class's margin floor, cheapest upstream first, and the most any of them may cost.
     */
    const routeOf = (
      planned: RoutePlan,
      privacy: PrivacyDecision,
      inputTokens: number,
      requestedOutput: number | undefined
    ): Effect.Effect<Route, MarginFloorViolated | UpstreamError> => {
      const floor = floors[privacy.served]
      const targets: Array<Target> = []
      let amount = 0n
      let floorMet = false
      for (const model of privacy.models) {
        const estimate = billing.estimate(model, inputTokens, requestedOutput)
        const upstreamCost = new Map<Deployment, Nanos>()
        for (const deployment of catalogue.deployments(model.id)) {
          if (!privacy.admits(deployment)) continue
          const cost = pricing.cost(model, deployment, estimate)
          if (meetsFloor(cost, floor)) upstreamCost.set(deployment, cost.upstream)
        }
        if (upstreamCost.size === 0) continue
        floorMet = true
        if (estimate.total > amount) amount = estimate.total
        const ordered = orderDeployments([...upstreamCost.keys()], (deployment) => upstreamCost.get(deployment)!, health)
        for (const deployment of ordered) targets.push({ model, deployment, outputTokens: estimate.outputTokens })
      }
      if (!floorMet) {
        return Effect.fail(
          new MarginFloorViolated({
            message: `No route for ${privacy.models[0]!.id} meets the margin floor of the ${privacy.served} class.`
          })
        )
      }
      if (targets.length === 0) {
        return Effect.fail(
          new UpstreamError({ message: "Every route for this request is recovering from failures; try again shortly." })
        )
      }
      return Effect.succeed({ reason: planned.reason, dropped: planned.dropped, privacy, targets, amount })
    }

    return RoutePlanner.of({
      // Made when it runs, its parts chained without a step each when they answer at once (services/atOnce.ts).
      plan: ({ inputTokens, privacy: ask, request }, fiber) =>
        stageOn(fiber, "svc.route_plan", () => {
          const shape = shapeOf(request, inputTokens)
          const expectedOutput = shape.requestedOutput ?? EXPECTED_OUTPUT_TOKENS
          const candidates = candidateOf(catalogue, health, pricing, inputTokens, expectedOutput)
          return thenAtOnce(planRoute(request, shape, catalogue, strategies, candidates), (planned) =>
            thenAtOnce(privacyPolicy.decide(ask, planned.models), (privacy) =>
              routeOf(planned, privacy, inputTokens, shape.requestedOutput)))
        })
    })
  })
)
