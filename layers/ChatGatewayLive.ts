/**
 * The chat path: route, reserve, call with failover, settle.
 *
 * 1. Count the input once, shape the request (layers/routing/requestShape.ts)
 *    and plan the models to try (routePlan.ts: router mode, explicit model,
 *    `models` list, eligibility).
 * 2. For each planned model, its deployments that meet the margin floor and
 *    whose circuit is not open, cheapest upstream first (deploymentOrder.ts).
 * 3. Reserve the largest estimate among the planned models, so any fallback
 *    is covered, and settle at the price of the model that served.
 * 4. Try the routes until one answers (failover.ts). A stream fails over until
 *    its first chunk; after that a failure becomes an SSE error frame and what
 *    was delivered is billed.
 *
 * Every response is re-labelled with our completion id and the catalogue model
 * id, so nothing the caller sees names the upstream.
 */
import { Chunk, Effect, ExecutionStrategy, Exit, FiberRef, Layer, Option, Scope, Stream } from "effect"
import { currentRequestId, type InvalidRequest, ServiceUnavailable, UpstreamError } from "../services/ApiError.ts"
import type { Principal } from "../services/ApiKeys.ts"
import { Catalogue, type Model } from "../services/Catalogue.ts"
import type { ChatChunk, ChatRequest, Usage } from "../services/Chat.ts"
import { ChatGateway } from "../services/ChatGateway.ts"
import { AppConfig } from "../services/Config.ts"
import { EventLog } from "../services/EventLog.ts"
import { Health } from "../services/Health.ts"
import { Ids } from "../services/Ids.ts"
import { type Attempt, Ledger, type Reservation } from "../services/Ledger.ts"
import type { Nanos } from "../services/Money.ts"
import { Pricing, type TokenUsage } from "../services/Pricing.ts"
import type { UpstreamCompletion, UpstreamFailure } from "../services/Providers.ts"
import { type RequestShape, RouterStrategies } from "../services/Router.ts"
import { billOf, SERVED_CLASS, scopedReservation, withReservation } from "./billedCall.ts"
import { orderDeployments } from "./routing/deploymentOrder.ts"
import { type Answered, type AttemptLog, firstThatAnswers, type RoutesFailed, type Target } from "./routing/failover.ts"
import { marginFloors, meetsFloor } from "./routing/marginFloor.ts"
import { routeEvents } from "./routing/routeEvents.ts"
import { planRoute, type RoutePlan } from "./routing/routePlan.ts"
import { shapeOf } from "./routing/requestShape.ts"
import { routesFailedError, toApiError } from "./upstreamErrors.ts"

/** Output tokens a request is expected to produce when it sets no maximum (for ranking, not for the reservation). */
const EXPECTED_OUTPUT_TOKENS = 500

const ENDPOINT = "/v1/chat/completions"

const fromUsage = (usage: Usage): TokenUsage => ({
  inputTokens: usage.prompt_tokens,
  outputTokens: usage.completion_tokens
})

/** Text a chunk adds to the answer, for counting when the upstream reports no usage. */
const generatedText = (chunk: ChatChunk) => {
  let text = ""
  for (const choice of chunk.choices) {
    text += choice.delta.content ?? ""
    for (const call of choice.delta.tool_calls ?? []) text += (call.function?.name ?? "") + (call.function?.arguments ?? "")
  }
  return text
}

/** The receipt's view of an attempt. */
const asAttempt = (log: AttemptLog): Attempt => ({
  model: log.model,
  outcome: log.outcome,
  latencyMs: log.latencyMs,
  deployment: log.deployment,
  ...(log.failure !== undefined ? { failure: log.failure } : {})
})

interface Route {
  readonly plan: RoutePlan
  readonly shape: RequestShape
  readonly targets: ReadonlyArray<Target>
  /** The reservation: the largest estimate among the models that may serve. */
  readonly amount: Nanos
}

export const ChatGatewayLive = Layer.effect(
  ChatGateway,
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const ids = yield* Ids
    const ledger = yield* Ledger
    const pricing = yield* Pricing
    const health = yield* Health
    const strategies = yield* RouterStrategies
    const events = yield* EventLog
    const config = yield* AppConfig

    const floor = marginFloors(config.file.marginFloor)[SERVED_CLASS]
    const policy = config.file.routing.retry

    /** Expected time to a whole answer on the model's best measured deployment. */
    const expectedLatencyMs = (model: Model, outputTokens: number): number | undefined => {
      let best: number | undefined
      for (const deployment of catalogue.deployments(model.id)) {
        const view = health.view(deployment.id)
        const expected = view.p50TtftMs !== undefined && view.tokensPerSecond !== undefined && view.tokensPerSecond > 0
          ? view.p50TtftMs + (outputTokens / view.tokensPerSecond) * 1000
          : view.p50LatencyMs
        if (expected !== undefined && (best === undefined || expected < best)) best = expected
      }
      return best
    }

    const route = (request: ChatRequest): Effect.Effect<Route, InvalidRequest | ServiceUnavailable | UpstreamError> =>
      Effect.gen(function*() {
        const inputTokens = pricing.countInput(request)
        const shape = shapeOf(request, inputTokens)
        const expectedOutput = shape.requestedOutput ?? EXPECTED_OUTPUT_TOKENS
        const plan = yield* planRoute(request, shape, catalogue, strategies, (model) => ({
          model,
          expectedCost: pricing.amount(model.pricing, { inputTokens, outputTokens: expectedOutput }),
          expectedLatencyMs: expectedLatencyMs(model, expectedOutput)
        }))
        const targets: Array<Target> = []
        let amount = 0n
        let floorMet = false
        for (const model of plan.models) {
          const estimate = pricing.estimateFor(model, inputTokens, shape.requestedOutput)
          const passing = catalogue.deployments(model.id).filter((deployment) =>
            meetsFloor(pricing.cost(model, deployment, estimate), floor)
          )
          if (passing.length === 0) continue
          floorMet = true
          if (estimate.total > amount) amount = estimate.total
          const ordered = orderDeployments(passing, (deployment) => pricing.cost(model, deployment, estimate).upstream, health)
          for (const deployment of ordered) targets.push({ model, deployment })
        }
        if (!floorMet) {
          return yield* new ServiceUnavailable({
            code: "margin_floor_violated",
            message: `No route for ${plan.models[0]!.id} meets the margin floor of the ${SERVED_CLASS} class.`
          })
        }
        if (targets.length === 0) {
          return yield* new UpstreamError({ message: "Every route for this request is recovering from failures; try again shortly." })
        }
        return { plan, shape, targets, amount }
      })

    /** Every route failed: the routing events still tell the story; then the caller's error. */
    const failed = (principal: Principal, plan: RoutePlan, routesFailed: RoutesFailed) =>
      Effect.gen(function*() {
        const requestId = yield* FiberRef.get(currentRequestId)
        yield* Effect.forEach(routeEvents(routesFailed.attempts, plan.reason), (event) =>
          events.record({
            type: event.type,
            accountId: principal.accountId!,
            ...(typeof requestId === "string" ? { requestId } : {}),
            data: event.data
          }), { discard: true })
        return yield* routesFailedError(routesFailed)
      })

    const recordSuccess = (answered: Answered<unknown>, latencyMs: number, outputTokens: number, ttftMs?: number) =>
      health.record({
        deployment: answered.target.deployment.id,
        model: answered.target.model.id,
        ok: true,
        latencyMs,
        outputTokens,
        attempt: answered.attempts.length,
        ...(ttftMs !== undefined ? { ttftMs } : {})
      })

    const settle = (
      reservation: Reservation,
      answered: Answered<unknown>,
      plan: RoutePlan,
      usage: TokenUsage,
      attempts: ReadonlyArray<AttemptLog>
    ) =>
      ledger.settle(
        reservation,
        billOf(
          pricing,
          ENDPOINT,
          answered.target.model,
          answered.target.deployment,
          usage,
          attempts.map(asAttempt),
          routeEvents(attempts, plan.reason)
        )
      )

    /** Usage by our own count, for an upstream that reported none. */
    const countedUsage = (request: ChatRequest, completion: UpstreamCompletion): Usage => {
      let text = ""
      for (const { message } of completion.choices) {
        text += message.content ?? ""
        for (const call of message.tool_calls ?? []) text += call.function.name + call.function.arguments
      }
      const prompt = pricing.countInput(request)
      const generated = pricing.countText(text)
      return { prompt_tokens: prompt, completion_tokens: generated, total_tokens: prompt + generated }
    }

    /**
     * Opens a stream on one route and waits for its first chunk, in a scope of its own: a route
     * that fails before that is closed (its upstream request aborted) and the next is tried.
     */
    const openStream = (request: ChatRequest, parent: Scope.Scope) => ({ deployment }: Target) =>
      Effect.flatMap(Scope.fork(parent, ExecutionStrategy.sequential), (scope) =>
        Effect.gen(function*() {
          const chunks = yield* deployment.adapter.stream({ request, upstreamModel: deployment.upstreamModel })
          const pull = yield* Stream.toPull(chunks)
          const first = yield* pull.pipe(
            Effect.catchAll(Option.match({
              onNone: () => Effect.succeed(Chunk.empty<ChatChunk>()),
              onSome: (failure) => Effect.fail(failure)
            }))
          )
          return Stream.concat(Stream.fromChunk(first), Stream.repeatEffectChunkOption(pull))
        }).pipe(
          Scope.extend(scope),
          Effect.onError(() => Scope.close(scope, Exit.void))
        ))

    return {
      complete: (request, principal) =>
        Effect.gen(function*() {
          const { amount, plan, targets } = yield* route(request)
          // A failed or abandoned call is not billed.
          return yield* withReservation(ledger, ids, principal, amount, (reservation) =>
            firstThatAnswers(targets, policy, health, ({ deployment }) =>
              deployment.adapter.complete({ request, upstreamModel: deployment.upstreamModel })).pipe(
                Effect.catchAll((routesFailed) => failed(principal, plan, routesFailed)),
                Effect.flatMap((answered) => {
                  const completion = answered.value
                  const usage = completion.usage ?? countedUsage(request, completion)
                  const model = answered.target.model.id
                  return recordSuccess(answered, answered.attempts.at(-1)!.latencyMs, usage.completion_tokens).pipe(
                    Effect.zipRight(settle(reservation, answered, plan, fromUsage(usage), answered.attempts)),
                    Effect.map((receipt) => ({ completion: { ...completion, id: ids.completion(), model, usage }, receipt })),
                    Effect.uninterruptible
                  )
                })
              ))
        }),

      stream: (request, principal) =>
        Effect.gen(function*() {
          const { amount, plan, targets } = yield* route(request)
          let closed = false
          // A response that is never pulled (the client left first) still frees its reservation.
          const reservation = yield* scopedReservation(ledger, ids, principal, amount, () => closed)
          const scope = yield* Effect.scope
          const answered = yield* firstThatAnswers(targets, policy, health, openStream(request, scope)).pipe(
            Effect.catchAll((routesFailed) => failed(principal, plan, routesFailed))
          )
          const firstChunkMs = performance.now() - answered.startedAt
          const { deployment, model } = answered.target
          const wantsUsage = request.stream_options?.include_usage === true
          const id = ids.completion()
          let reported: Usage | undefined
          let generated = ""
          let failure: UpstreamFailure | undefined

          // However the stream ends, bill what was generated: the upstream's usage when it
          // reported one, else our own count of what reached us.
          const settleStream = Effect.suspend(() => {
            closed = true
            const latencyMs = Math.round(performance.now() - answered.startedAt)
            const attempts = answered.attempts.map((attempt, i) =>
              i < answered.attempts.length - 1 ? attempt : {
                ...attempt,
                latencyMs,
                ...(failure !== undefined
                  ? { outcome: failure.kind === "timeout" ? "timeout" as const : "error" as const, failure: failure.kind }
                  : {})
              }
            )
            const usage = reported !== undefined
              ? fromUsage(reported)
              : { inputTokens: pricing.countInput(request), outputTokens: pricing.countText(generated) }
            const recorded = failure === undefined
              ? recordSuccess(answered, latencyMs, usage.outputTokens, Math.round(firstChunkMs))
              : health.record({
                deployment: deployment.id,
                model: model.id,
                ok: false,
                failure: failure.kind,
                latencyMs,
                attempt: attempts.length
              })
            if (reported === undefined && generated === "" && failure !== undefined) {
              return Effect.zipRight(recorded, ledger.release(reservation))
            }
            return Effect.zipRight(recorded, settle(reservation, answered, plan, usage, attempts))
          })

          return {
            receiptId: reservation.id,
            chunks: answered.value.pipe(
              Stream.tap((chunk) =>
                Effect.sync(() => {
                  if (chunk.usage) reported = chunk.usage
                  generated += generatedText(chunk)
                })
              ),
              // Adapters always report usage (billing needs it); the caller sees it only if asked.
              Stream.filter((chunk) => wantsUsage || chunk.choices.length > 0),
              Stream.map((chunk): ChatChunk => ({ ...chunk, id, model: model.id })),
              Stream.catchAll((upstream) => {
                failure = upstream
                return Stream.fromEffect(toApiError(deployment)(upstream))
              }),
              Stream.ensuring(Effect.asVoid(settleStream))
            )
          }
        })
    }
  })
)
