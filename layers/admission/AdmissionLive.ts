/**
 * Admission of a call. A chat call: its messages opened (legacy sealed prompts are
 * opened here, before anything counts or routes them), its privacy envelope
 * read, its input counted once. An embeddings call: each input counted. The
 * rate limiter joins here.
 */
import { Effect, Layer } from "effect"
import { Admission } from "../../services/Admission.ts"
import { inputsOf } from "../../services/Embeddings.ts"
import { Pricing } from "../../services/Pricing.ts"
import { PrivacyPolicy } from "../../services/PrivacyPolicy.ts"
import { SealedPrompts } from "../../services/SealedPrompts.ts"
import { withOpenMessages } from "./requestMessages.ts"

export const AdmissionLive = Layer.effect(
  Admission,
  Effect.gen(function*() {
    const sealedPrompts = yield* SealedPrompts
    const pricing = yield* Pricing
    const privacyPolicy = yield* PrivacyPolicy
    return Admission.of({
      chat: (sent, principal) =>
        Effect.gen(function*() {
          const request = yield* withOpenMessages(sealedPrompts, sent)
          const privacy = yield* privacyPolicy.ask(request)
          return { principal, request, privacy, inputTokens: pricing.countInput(request) }
        }),
      embeddings: (request, principal) =>
        Effect.sync(() => {
          const inputs = inputsOf(request)
          return { principal, request, inputs, inputTokens: inputs.map(pricing.counter()) }
        })
    })
  })
)
