/**
 * The chat path for an explicit model id: first deployment of the model,
 * upstream failures translated to the caller's errors, and every response
 * re-labelled with our completion id and the catalogue model id, so nothing
 * the caller sees names the upstream.
 */
import { Effect, Layer, Option, Stream } from "effect"
import { InvalidRequest, UpstreamError, UpstreamTimeout } from "../services/ApiError.ts"
import { Catalogue, type Deployment, type Model } from "../services/Catalogue.ts"
import type { ChatChunk, ChatRequest } from "../services/Chat.ts"
import { type ChatError, ChatGateway } from "../services/ChatGateway.ts"
import { Ids } from "../services/Ids.ts"
import type { UpstreamFailure } from "../services/Providers.ts"

const toApiError = (deployment: Deployment) => (failure: UpstreamFailure): Effect.Effect<never, ChatError> =>
  Effect.logWarning("upstream call failed").pipe(
    Effect.annotateLogs({
      provider: deployment.provider.id,
      kind: failure.kind,
      status: failure.status ?? null,
      detail: failure.detail
    }),
    Effect.zipRight(
      Effect.fail(
        failure.kind === "timeout"
          ? new UpstreamTimeout({ message: "The model did not answer in time." })
          : failure.kind === "status" && failure.status !== undefined && failure.status >= 400 &&
              failure.status < 500 && failure.status !== 408 && failure.status !== 429
          ? new InvalidRequest({ message: `The model rejected the request (status ${failure.status}).` })
          : new UpstreamError({ message: "The model's upstream failed; try again." })
      )
    )
  )

export const ChatGatewayLive = Layer.effect(
  ChatGateway,
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const ids = yield* Ids

    const resolve = (request: ChatRequest): Effect.Effect<{ model: Model; deployment: Deployment }, InvalidRequest> => {
      const model = catalogue.get(request.model)
      if (Option.isNone(model)) {
        return Effect.fail(
          new InvalidRequest({
            message: `Unknown model "${request.model}"; GET /v1/models lists the models you can use.`,
            param: "model"
          })
        )
      }
      if (!model.value.capabilities.includes("chat")) {
        return Effect.fail(
          new InvalidRequest({ message: `${model.value.id} does not serve chat completions.`, param: "model" })
        )
      }
      // Every listed model has a deployment; choosing among several is the router's job.
      return Effect.succeed({ model: model.value, deployment: catalogue.deployments(model.value.id)[0]! })
    }

    const relabel = (id: string, model: Model) => (chunk: ChatChunk): ChatChunk => ({ ...chunk, id, model: model.id })

    return {
      complete: (request) =>
        Effect.gen(function*() {
          const { deployment, model } = yield* resolve(request)
          const completion = yield* deployment.adapter.complete({ request, upstreamModel: deployment.upstreamModel }).pipe(
            Effect.catchAll(toApiError(deployment))
          )
          return { ...completion, id: ids.completion(), model: model.id }
        }),

      stream: (request) =>
        Effect.gen(function*() {
          const { deployment, model } = yield* resolve(request)
          const chunks = yield* deployment.adapter.stream({ request, upstreamModel: deployment.upstreamModel }).pipe(
            Effect.catchAll(toApiError(deployment))
          )
          const wantsUsage = request.stream_options?.include_usage === true
          return chunks.pipe(
            // Adapters always report usage (billing needs it); the caller sees it only if asked.
            Stream.filter((chunk) => wantsUsage || chunk.choices.length > 0),
            Stream.map(relabel(ids.completion(), model)),
            Stream.catchAll((failure) => Stream.fromEffect(toApiError(deployment)(failure)))
          )
        })
    }
  })
)
