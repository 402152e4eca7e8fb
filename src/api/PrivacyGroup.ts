/**
 * `GET /v1/privacy/keys`: the JWKS legacy callers seal `privacy.encryptedPrompt`
 * to. Public keys are public: no API key is needed to read them.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { PromptKeySet } from "../../services/SealedPrompts.ts"
import { documented } from "./operationDocs.ts"

export class PrivacyGroup extends HttpApiGroup.make("privacy")
  .add(
    HttpApiEndpoint.get("promptKeys", "/v1/privacy/keys")
      .addSuccess(PromptKeySet)
      .annotateContext(documented(
        "Get the prompt-sealing keys",
        "A JWKS of the gateway's public keys for `privacy.encryptedPrompt`; no API key needed."
      ))
  )
  .annotate(OpenApi.Description, "Keys that callers seal encrypted prompts to")
{}
