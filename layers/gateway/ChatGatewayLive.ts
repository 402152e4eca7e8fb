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
import {
  currentRequestId,
  type InvalidRequest,
  PrivacyUnavailable,
  ServiceUnavailable,
  UpstreamError
} from "../../services/ApiError.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import { Attestation, type AttestationRefused } from "../../services/Attestation.ts"
import { Catalogue, type Deployment, type Model } from "../../services/Catalogue.ts"
import type { ChatChunk, ChatRequest, Usage } from "../../services/Chat.ts"
import { ChatGateway } from "../../services/ChatGateway.ts"
import { AppConfig, type PrivacyClass } from "../../services/Config.ts"
import { EventLog } from "../../services/EventLog.ts"
import { Health } from "../../services/Health.ts"
import { Ids } from "../../services/Ids.ts"
import { type Attempt, type CallEvent, Ledger, type Receipt, type Reservation } from "../../services/Ledger.ts"
import type { Nanos } from "../../services/Money.ts"
import { Pricing, type TokenUsage } from "../../services/Pricing.ts"
import { type PrivacyBlock, privacyBlock } from "../../services/Privacy.ts"
import type { UpstreamCompletion, UpstreamFailure } from "../../services/Providers.ts"
import { RouterStrategies } from "../../services/Router.ts"
import { SealedPrompts } from "../../services/SealedPrompts.ts"
import { type TranscriptCompletion, Transcripts } from "../../services/Transcripts.ts"
import { billOf, scopedReservation, withReservation } from "../billing/billedCall.ts"
import { orderDeployments } from "../routing/deploymentOrder.ts"
import { type Answered, type AttemptLog, firstThatAnswers, type RoutesFailed, type Target } from "../routing/failover.ts"
import { marginFloors, meetsFloor } from "../routing/marginFloor.ts"
import { withOpenMessages } from "./requestMessages.ts"
import { privacyAskOf } from "../privacy/privacyAsk.ts"
import { chooseClass } from "../privacy/privacyClass.ts"
import { candidateOf } from "../routing/candidates.ts"
import { routeEvents } from "../routing/routeEvents.ts"
import { planRoute, type RoutePlan } from "../routing/routePlan.ts"
import { shapeOf } from "../routing/requestShape.ts"
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

/** What a kept transcript holds of a completion: its first choice's answer. */
const completionText = (completion: UpstreamCompletion): TranscriptCompletion => {
  const message = completion.choices[0]?.message
  return {
    content: message?.content ?? null,
    ...(message?.tool_calls !== undefined && message.tool_calls.length > 0 ? { tool_calls: message.tool_calls } : {})
  }
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
  /** The class every route of this call earns: what the response and the receipt promise. */
  readonly served: PrivacyClass
  /** Events recorded with the receipt: the class served, and a downgrade if the caller allowed one. */
  readonly privacyEvents: ReadonlyArray<CallEvent>
  /** Confidential calls: deployment id → the attestation verdict it serves under. */
  readonly attested: ReadonlyMap<string, string>
  readonly targets: ReadonlyArray<Target>
  /** The reservation: the largest estimate among the models that may serve. */
  readonly amount: Nanos
  /** The request's input tokens by our own count (billed when an upstream reports no usage). */
  readonly inputTokens: number
}

export const ChatGatewayLive = Layer.effect(
  ChatGateway,
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const ids = yield* Ids
    const ledger = yield* Ledger
    const sealedPrompts = yield* SealedPrompts
    const transcripts = yield* Transcripts
    const pricing = yield* Pricing
    const health = yield* Health
    const strategies = yield* RouterStrategies
    const events = yield* EventLog
    const attestationService = yield* Attestation
    const config = yield* AppConfig

    const floors = marginFloors(config.file.marginFloor)
    const policy = config.file.routing.retry

    /** Records events of a call that leaves no receipt (those with one are written with it). */
    const recordWithoutReceipt = (principal: Principal, callEvents: ReadonlyArray<CallEvent>) =>
      Effect.flatMap(FiberRef.get(currentRequestId), (requestId) =>
        Effect.forEach(callEvents, (event) =>
          events.record({
            type: event.type,
            accountId: principal.accountId!,
            ...(typeof requestId === "string" ? { requestId } : {}),
            data: event.data
          }), { discard: true }))

    const rejectPrivacy = <E>(request: ChatRequest, principal: Principal, error: E, data: Record<string, unknown>) =>
      Effect.zipRight(
        recordWithoutReceipt(principal, [{ type: "privacy.rejected", data: { model: request.model, ...data } }]),
        Effect.fail(error)
      )

    /**
     * The verdicts of the confidential deployments of these models: deployment id → verdict id for
     * those whose runtime attests now, and the first refusal (for the caller's reason).
     */
    const attest = (models: ReadonlyArray<Model>) =>
      Effect.gen(function*() {
        const attested = new Map<string, string>()
        let refusal: AttestationRefused | undefined
        for (const deployment of models.flatMap((model) => catalogue.deployments(model.id))) {
          const attestation = deployment.policy.attestation
          if (!deployment.privacyClasses.includes("confidential_runtime_route") || attestation === undefined) continue
          const verdict = yield* Effect.either(attestationService.verdict(deployment.provider.id, attestation))
          if (verdict._tag === "Right") {
            attested.set(deployment.id, verdict.right.id)
            continue
          }
          refusal ??= verdict.left
          yield* Effect.logWarning("attestation refused").pipe(
            Effect.annotateLogs({ deployment: deployment.id, reason: verdict.left.reason, detail: verdict.left.detail })
          )
        }
        return { attested, refusal }
      })

    const route = (
      request: ChatRequest,
      principal: Principal
    ): Effect.Effect<Route, InvalidRequest | PrivacyUnavailable | ServiceUnavailable | UpstreamError> =>
      Effect.gen(function*() {
        const ask = yield* privacyAskOf(request)
        const inputTokens = pricing.countInput(request)
        const shape = shapeOf(request, inputTokens)
        const expectedOutput = shape.requestedOutput ?? EXPECTED_OUTPUT_TOKENS
        const planned = yield* planRoute(
          request,
          shape,
          catalogue,
          strategies,
          candidateOf(catalogue, health, pricing, inputTokens, expectedOutput)
        )

        // The class promised: the one asked for when some planned model earns it; the strongest the
        // first model earns for `bestAvailable`, or when the caller allowed a lower class. Fallbacks
        // and retries only go to deployments that earn it: never weaker than promised.
        const first = planned.models[0]!
        const choice = chooseClass(ask, planned.models.map((model) => model.privacyClasses))
        const requested = choice.requested
        if (choice._tag === "Refuse") {
          return yield* rejectPrivacy(
            request,
            principal,
            new PrivacyUnavailable({
              message: `${first.id} cannot be served at ${requested}; set privacy.allowFallbackToLowerClass to accept ` +
                `the strongest class it earns, or choose another model (GET /v1/models lists each model's classes).`,
              param: "privacy.class"
            }),
            { requested, reason: "not_earnable" }
          )
        }
        const served = choice.served
        const privacyEvents: Array<CallEvent> = []
        if (choice.downgraded) {
          privacyEvents.push({ type: "privacy.downgraded", data: { requested, served, model: first.id } })
        }
        const plan = { ...planned, models: planned.models.filter((model) => model.privacyClasses.includes(served)) }
        // A confidential route serves only while its runtime's attestation verdict is fresh; with none,
        // the call fails closed (503 with the reason), never silently served weaker.
        const { attested, refusal } = served === "confidential_runtime_route"
          ? yield* attest(plan.models)
          : { attested: new Map<string, string>(), refusal: undefined }
        if (served === "confidential_runtime_route" && attested.size === 0) {
          const reason = refusal?.reason ?? "verifier_unreachable"
          return yield* rejectPrivacy(
            request,
            principal,
            new ServiceUnavailable({
              code: "privacy_class_runtime_unavailable",
              message: `No confidential runtime of this model has a valid attestation now (reason: ${reason}).`,
              param: "privacy.class",
              retryAfterSeconds: Math.max(1, Math.ceil(refusal?.retryAfterSeconds ?? 30))
            }),
            { requested, reason }
          )
        }
        privacyEvents.push({
          type: "privacy.class_served",
          data: attested.size > 0 ? { class: served, attestation_verdicts: [...attested.values()] } : { class: served }
        })
        const servable = (deployment: Deployment) =>
          deployment.privacyClasses.includes(served) &&
          (served !== "confidential_runtime_route" || attested.has(deployment.id))

        const floor = floors[served]
        const targets: Array<Target> = []
        let amount = 0n
        let floorMet = false
        for (const model of plan.models) {
          const estimate = pricing.estimateFor(model, inputTokens, shape.requestedOutput)
          const upstreamCost = new Map<Deployment, Nanos>()
          for (const deployment of catalogue.deployments(model.id)) {
            if (!servable(deployment)) continue
            const cost = pricing.cost(model, deployment, estimate)
            if (meetsFloor(cost, floor)) upstreamCost.set(deployment, cost.upstream)
          }
          if (upstreamCost.size === 0) continue
          floorMet = true
          if (estimate.total > amount) amount = estimate.total
          const ordered = orderDeployments([...upstreamCost.keys()], (deployment) => upstreamCost.get(deployment)!, health)
          for (const deployment of ordered) targets.push({ model, deployment })
        }
        if (!floorMet) {
          return yield* new ServiceUnavailable({
            code: "margin_floor_violated",
            message: `No route for ${plan.models[0]!.id} meets the margin floor of the ${served} class.`
          })
        }
        if (targets.length === 0) {
          return yield* new UpstreamError({ message: "Every route for this request is recovering from failures; try again shortly." })
        }
        return { plan, served, privacyEvents, attested, targets, amount, inputTokens }
      })

    /** Every route failed: the routing events still tell the story; then the caller's error. */
    const failed = (principal: Principal, plan: RoutePlan, routesFailed: RoutesFailed) =>
      Effect.zipRight(
        recordWithoutReceipt(principal, routeEvents(routesFailed.attempts, plan.reason)),
        routesFailedError(routesFailed)
      )

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

    /** Bills the call; then keeps its text when its class and the operator's setting say so. */
    const settle = (
      reservation: Reservation,
      answered: Answered<unknown>,
      route: Route,
      usage: TokenUsage,
      attempts: ReadonlyArray<AttemptLog>,
      text: { readonly messages: ChatRequest["messages"]; readonly completion: TranscriptCompletion }
    ) => {
      const verdict = route.attested.get(answered.target.deployment.id)
      const kept = (receipt: Receipt) =>
        transcripts.keep({ receiptId: receipt.id, accountId: receipt.accountId, servedClass: route.served, ...text })
      return ledger.settle(reservation, {
        ...billOf(
          pricing,
          ENDPOINT,
          answered.target.model,
          answered.target.deployment,
          usage,
          attempts.map(asAttempt),
          [...routeEvents(attempts, route.plan.reason), ...route.privacyEvents],
          route.served
        ),
        ...(verdict !== undefined ? { attestationVerdicts: [verdict] } : {})
      }).pipe(Effect.tap(kept))
    }

    const blockFor = (route: Route, answered: Answered<unknown>): PrivacyBlock =>
      privacyBlock(
        route.served,
        answered.target.deployment.policy.trains,
        transcripts.keeps(route.served) ? transcripts.retentionDays : undefined
      )

    /** Usage by our own count, for an upstream that reported none. */
    const countedUsage = (inputTokens: number, completion: UpstreamCompletion): Usage => {
      let text = ""
      for (const { message } of completion.choices) {
        text += message.content ?? ""
        for (const call of message.tool_calls ?? []) text += call.function.name + call.function.arguments
      }
      const generated = pricing.countText(text)
      return { prompt_tokens: inputTokens, completion_tokens: generated, total_tokens: inputTokens + generated }
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
          // Pulls can be empty (a read that held only a keep-alive comment): wait for real content.
          const first = yield* pull.pipe(
            Effect.repeat({ until: (chunk) => Chunk.isNonEmpty(chunk) }),
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
      complete: (sent, principal) =>
        Effect.gen(function*() {
          const request = yield* withOpenMessages(sealedPrompts, sent)
          const routed = yield* route(request, principal)
          const { amount, plan, targets } = routed
          // A failed or abandoned call is not billed.
          return yield* withReservation(ledger, ids, principal, amount, (reservation) =>
            firstThatAnswers(targets, policy, health, ({ deployment }) =>
              deployment.adapter.complete({ request, upstreamModel: deployment.upstreamModel })).pipe(
                Effect.catchAll((routesFailed) => failed(principal, plan, routesFailed)),
                Effect.flatMap((answered) => {
                  const completion = answered.value
                  const usage = completion.usage ?? countedUsage(routed.inputTokens, completion)
                  const model = answered.target.model.id
                  return recordSuccess(answered, answered.attempts.at(-1)!.latencyMs, usage.completion_tokens).pipe(
                    Effect.zipRight(settle(reservation, answered, routed, fromUsage(usage), answered.attempts, {
                      messages: request.messages,
                      completion: completionText(completion)
                    })),
                    Effect.map((receipt) => ({
                      completion: { ...completion, id: ids.completion(), model, usage, privacy: blockFor(routed, answered) },
                      receipt
                    })),
                    Effect.uninterruptible
                  )
                })
              ))
        }),

      stream: (sent, principal) =>
        Effect.gen(function*() {
          const request = yield* withOpenMessages(sealedPrompts, sent)
          const routed = yield* route(request, principal)
          const { amount, plan, targets } = routed
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
          const privacy = blockFor(routed, answered)
          let privacySent = false
          let reported: Usage | undefined
          let generated = ""
          /** The answer's text, gathered only when the call's text is kept (a transcript). */
          const keepsText = transcripts.keeps(routed.served)
          let content = ""
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
              : { inputTokens: routed.inputTokens, outputTokens: pricing.countText(generated) }
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
            return Effect.zipRight(
              recorded,
              settle(reservation, answered, routed, usage, attempts, { messages: request.messages, completion: { content } })
            )
          })

          return {
            receiptId: reservation.id,
            chunks: answered.value.pipe(
              // One synchronous pass per pulled chunk (cheaper than an effect per frame): note what
              // billing needs, drop the usage chunk unless the caller asked for usage (adapters always
              // report it), and put the privacy block on the final chunk: the usage chunk when the
              // caller asked for usage, else the one with the finish reason (or, if none came, a last
              // chunk of its own).
              Stream.mapChunks((pulled) => {
                const out: Array<ChatChunk> = []
                for (const chunk of pulled) {
                  if (chunk.usage) reported = chunk.usage
                  generated += generatedText(chunk)
                  if (keepsText) content += chunk.choices[0]?.delta.content ?? ""
                  if (!wantsUsage && chunk.choices.length === 0) continue
                  const final = wantsUsage
                    ? chunk.usage != null
                    : chunk.choices.some((choice) => choice.finish_reason !== null)
                  if (!final || privacySent) {
                    out.push({ ...chunk, id, model: model.id })
                  } else {
                    privacySent = true
                    out.push({ ...chunk, id, model: model.id, privacy })
                  }
                }
                return Chunk.unsafeFromArray(out)
              }),
              Stream.concat(Stream.suspend(() =>
                privacySent ? Stream.empty : Stream.succeed<ChatChunk>({
                  id,
                  object: "chat.completion.chunk",
                  created: Math.floor(Date.now() / 1000),
                  model: model.id,
                  choices: [],
                  privacy
                })
              )),
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
