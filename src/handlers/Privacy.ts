/** The published prompt-sealing keys, cacheable for a few minutes (a rotated key keeps opening for days). */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { SealedPrompts } from "../../services/SealedPrompts.ts"
import { Api } from "../api/Api.ts"

export const PrivacyHandlers = HttpApiBuilder.group(Api, "privacy", (handlers) =>
  Effect.map(SealedPrompts, (sealed) =>
    handlers.handle("promptKeys", () =>
      Effect.map(sealed.publicKeys, (keys) =>
        HttpServerResponse.unsafeJson({ keys }, {
          headers: { "cache-control": "public, max-age=300", "content-type": "application/json" }
        })))))
