/**
 * Admission of a call. A chat call: its messages opened (legacy sealed prompts are
 * opened here, before anything counts or routes them), its privacy envelope
 * read, its input counted once. An embeddings call: each input counted. Then
 * the key's rate limits count the call: one request, and its input plus the
 * output it asks for at most (corrected to its real tokens at settlement).
 */
import { Effect, Layer } from "effect"
import { Admission } from "../../services/Admission.ts"
import { requestedMaxTokens } from "../../services/Chat.ts"
import { inputsOf } from "../../services/Embeddings.ts"
import { Pricing } from "../../services/Pricing.ts"
import { PrivacyPolicy } from "../../services/PrivacyPolicy.ts"
import { RateLimiter } from "../../services/RateLimiter.ts"
import { SealedPrompts } from "../../services/SealedPrompts.ts"
import { mapAtOnce, thenAtOnce } from "../../services/atOnce.ts"
import { withOpenMessages } from "./requestMessages.ts"
import { checkToolChoice } from "./requestTools.ts"
import { stageOn, stageSpan } from "../telemetry/stageSpan.ts"

export const AdmissionLive = Layer.effect(
  Admission,
  Effect.gen(function*() {
    const sealedPrompts = yield* SealedPrompts
    const pricing = yield* Pricing
    const privacyPolicy = yield* PrivacyPolicy
    const limiter = yield* RateLimiter
    return Admission.of({
      // Stages that answer at once, chained without a step each (services/atOnce.ts): every chat call runs it.
      chat: (sent, principal, given) =>
        stageOn(given, "svc.admission", (fiber) =>
          thenAtOnce(withOpenMessages(sealedPrompts, sent), (request) =>
            thenAtOnce(checkToolChoice(request), () =>
              thenAtOnce(privacyPolicy.ask(request), (privacy) =>
                thenAtOnce(pricing.countInputFairly(request), (inputTokens) =>
                  mapAtOnce(
                    limiter.admit(principal, inputTokens + (requestedMaxTokens(request) ?? 0), fiber),
                    (rateLimit) => ({ principal, request, privacy, inputTokens, rateLimit })
                  )))))),
      embeddings: (request, principal) =>
        Effect.gen(function*() {
          const inputs = inputsOf(request)
          const inputTokens = yield* pricing.countTexts(inputs)
          const rateLimit = yield* limiter.admit(principal, inputTokens.reduce((sum, n) => sum + n, 0))
          return { principal, request, inputs, inputTokens, rateLimit }
        }).pipe(stageSpan("svc.admission"))
    })
  })
)
