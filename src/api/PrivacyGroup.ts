/**
 * `GET /v1/privacy/keys`: the JWKS legacy callers seal `privacy.encryptedPrompt`
 * to. Public keys are public: no API key is needed to read them.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { PromptKeySet } from "../../services/SealedPrompts.ts"

export class PrivacyGroup extends HttpApiGroup.make("privacy")
  .add(HttpApiEndpoint.get("promptKeys", "/v1/privacy/keys").addSuccess(PromptKeySet))
{}
