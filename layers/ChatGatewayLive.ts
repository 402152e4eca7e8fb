/**
 * The chat path for an explicit model id: reserve the estimate, call the
 * model's first deployment, settle at actual usage (or release on failure),
 * and re-label every response with our completion id and the catalogue model
 * id, so nothing the caller sees names the upstream.
 */
import { Effect, Exit, Layer, Option, Stream } from "effect"
import { ServiceUnavailable } from "../services/ApiError.ts"
import { AppConfig, type ConfigFile, type PrivacyClass } from "../services/Config.ts"
import { type Nanos, parseUsd } from "../services/Money.ts"
import { Catalogue, type Deployment, type Model } from "../services/Catalogue.ts"
import type { ChatChunk, ChatRequest, Usage } from "../services/Chat.ts"
import { ChatGateway } from "../services/ChatGateway.ts"
import type { UpstreamCompletion } from "../services/Providers.ts"
import { Ids } from "../services/Ids.ts"
import { type Attempt, Ledger, type Reservation } from "../services/Ledger.ts"
import { type Cost, type Estimate, Pricing, type TokenUsage } from "../services/Pricing.ts"
import { billOf, modelFor, SERVED_CLASS, scopedReservation, withReservation } from "./billedCall.ts"
import { toApiError } from "./upstreamErrors.ts"

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

const NANO = 1_000_000_000n

/** Floors as fractions of the total, in billionths; an unconfigured class has none. */
const marginFloors = (configured: ConfigFile["marginFloor"]): Record<PrivacyClass, Nanos> => {
  const floor = (privacyClass: PrivacyClass) =>
    Option.getOrElse(Option.flatMap(Option.fromNullable(configured?.[privacyClass]), parseUsd), () => 0n)
  return {
    standard_route: floor("standard_route"),
    protected_provider_route: floor("protected_provider_route"),
    private_gateway_route: floor("private_gateway_route"),
    confidential_runtime_route: floor("confidential_runtime_route")
  }
}

/** margin / total ≥ floor, in exact integers. */
const meetsFloor = (cost: Cost, floor: Nanos) => cost.margin * NANO >= floor * cost.total

export const ChatGatewayLive = Layer.effect(
  ChatGateway,
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const ids = yield* Ids
    const ledger = yield* Ledger
    const pricing = yield* Pricing
    const config = yield* AppConfig

    const floors = marginFloors(config.file.marginFloor)

    /** The first deployment whose expected margin meets the floor of the class served; choosing better is the router's job. */
    const deploymentFor = (model: Model, estimate: Estimate, privacyClass: PrivacyClass) => {
      const floor = floors[privacyClass]
      const deployment = catalogue.deployments(model.id).find((candidate) =>
        meetsFloor(pricing.cost(model, candidate, estimate), floor)
      )
      return deployment !== undefined ? Effect.succeed(deployment) : Effect.fail(
        new ServiceUnavailable({
          code: "margin_floor_violated",
          message: `No route for ${model.id} meets the margin floor of the ${privacyClass} class.`
        })
      )
    }

    /** Resolves the model, the deployment and the estimate to reserve. */
    const prepare = (request: ChatRequest) =>
      Effect.gen(function*() {
        const model = yield* modelFor(catalogue, request.model, "chat", "chat completions")
        const estimate = pricing.estimate(model, request)
        const deployment = yield* deploymentFor(model, estimate, SERVED_CLASS)
        return { deployment, model, estimate }
      })

    const settle = (
      model: Model,
      deployment: Deployment,
      reservation: Reservation,
      usage: TokenUsage,
      attempt: Attempt
    ) => ledger.settle(reservation, billOf(pricing, "/v1/chat/completions", model, deployment, usage, attempt))

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

    const since = (start: number) => Math.round(performance.now() - start)

    return {
      complete: (request, principal) =>
        Effect.gen(function*() {
          const { deployment, estimate, model } = yield* prepare(request)
          const started = performance.now()
          // A failed or abandoned call is not billed.
          return yield* withReservation(ledger, ids, principal, estimate.total, (reservation) =>
            deployment.adapter.complete({ request, upstreamModel: deployment.upstreamModel }).pipe(
              Effect.catchAll(toApiError(deployment)),
              Effect.flatMap((completion) => {
                const usage = completion.usage ?? countedUsage(request, completion)
                return Effect.map(
                  settle(model, deployment, reservation, fromUsage(usage), {
                    model: model.id,
                    outcome: "ok",
                    latencyMs: since(started)
                  }),
                  (receipt) => ({ completion: { ...completion, id: ids.completion(), model: model.id, usage }, receipt })
                ).pipe(Effect.uninterruptible)
              })
            ))
        }),

      stream: (request, principal) =>
        Effect.gen(function*() {
          const { deployment, estimate, model } = yield* prepare(request)
          let closed = false
          // A response that is never pulled (the client left first) still frees its reservation.
          const reservation = yield* scopedReservation(ledger, ids, principal, estimate.total, () => closed)
          const started = performance.now()
          const chunks = yield* deployment.adapter.stream({ request, upstreamModel: deployment.upstreamModel }).pipe(
            Effect.catchAll(toApiError(deployment)),
            Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : ledger.release(reservation))
          )
          const wantsUsage = request.stream_options?.include_usage === true
          const id = ids.completion()
          let reported: Usage | undefined
          let generated = ""
          let failed = false

          // However the stream ends, bill what was generated: the upstream's usage when it
          // reported one, else our own count of what reached us.
          const settleStream = Effect.suspend(() => {
            closed = true
            if (reported === undefined && generated === "" && failed) return ledger.release(reservation)
            const usage = reported !== undefined
              ? fromUsage(reported)
              : { inputTokens: pricing.countInput(request), outputTokens: pricing.countText(generated) }
            return settle(model, deployment, reservation, usage, {
              model: model.id,
              outcome: failed ? "error" : "ok",
              latencyMs: since(started)
            })
          })

          return {
            receiptId: reservation.id,
            chunks: chunks.pipe(
              Stream.tap((chunk) =>
                Effect.sync(() => {
                  if (chunk.usage) reported = chunk.usage
                  generated += generatedText(chunk)
                })
              ),
              // Adapters always report usage (billing needs it); the caller sees it only if asked.
              Stream.filter((chunk) => wantsUsage || chunk.choices.length > 0),
              Stream.map((chunk): ChatChunk => ({ ...chunk, id, model: model.id })),
              Stream.catchAll((failure) => {
                failed = true
                return Stream.fromEffect(toApiError(deployment)(failure))
              }),
              Stream.ensuring(Effect.asVoid(settleStream))
            )
          }
        })
    }
  })
)
