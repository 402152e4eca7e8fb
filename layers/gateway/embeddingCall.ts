/**
 * One embeddings call to a catalogue model, without billing: which
 * deployment serves the model (its first; the model must serve embeddings),
 * and the call itself within the chat path's deadlines, its failure as the
 * caller's error. The embeddings endpoint bills it on a hold of its own; an
 * agent run bills it as a line item of the run's receipt.
 */
import { Effect, Option } from "effect"
import { InvalidRequest } from "../../services/ApiError.ts"
import type { Catalogue, Deployment, Model } from "../../services/Catalogue.ts"
import type { AppConfig } from "../../services/Config.ts"
import type { EmbedCall, EmbedResult } from "../../services/Embeddings.ts"
import { quote } from "../../services/quote.ts"
import { callDeadline, withinAttempt } from "../upstream/deadline.ts"
import { toApiError } from "../upstream/upstreamErrors.ts"

export interface EmbeddingTarget {
  readonly model: Model
  readonly deployment: Deployment
  readonly embed: NonNullable<Deployment["adapter"]["embed"]>
}

const unknownModel = (id: string) =>
  new InvalidRequest({ message: `Unknown model "${quote(id)}"; GET /v1/models lists the models you can use.`, param: "model" })

/** The model `id` and the deployment that embeds for it, or the caller's 400 naming `model`. */
export const embeddingTarget = (catalogue: Catalogue["Type"], id: string): Effect.Effect<EmbeddingTarget, InvalidRequest> =>
  Effect.gen(function*() {
    const model = yield* Option.match(catalogue.get(id), { onNone: () => Effect.fail(unknownModel(id)), onSome: Effect.succeed })
    if (!model.capabilities.includes("embeddings")) {
      return yield* new InvalidRequest({ message: `${model.id} does not serve embeddings.`, param: "model" })
    }
    const deployment = catalogue.deployments(model.id)[0]
    const embed = deployment?.adapter.embed
    if (deployment === undefined || embed === undefined) {
      return yield* new InvalidRequest({ message: `${model.id} cannot serve embeddings now.`, param: "model" })
    }
    return { model, deployment, embed }
  })

/** Embeds `call.input` on the target's deployment; how long it took, for the receipt's attempt. */
export const callEmbedding = (
  target: EmbeddingTarget,
  call: Omit<EmbedCall, "upstreamModel">,
  deadlines: AppConfig["Type"]["file"]["routing"]["deadline"]
) =>
  Effect.gen(function*() {
    const started = performance.now()
    const deadline = yield* callDeadline(deadlines)
    const result: EmbedResult = yield* withinAttempt(
      target.embed({ ...call, upstreamModel: target.deployment.upstreamModel }),
      target.deployment.provider.timeoutMs,
      deadline
    ).pipe(Effect.catchAll(toApiError(target.deployment)))
    return { result, latencyMs: Math.round(performance.now() - started) }
  })
