/**
 * The API, declared once: the server, the tests' typed client and
 * `/openapi.json` all derive from this value. Errors every endpoint can
 * answer with are declared here, on the API.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { Wire } from "../../services/ApiError.ts"
import { AdminGroup } from "./AdminGroup.ts"
import { ChatGroup } from "./ChatGroup.ts"
import { EmbeddingsGroup } from "./EmbeddingsGroup.ts"
import { ModelsGroup } from "./ModelsGroup.ts"
import { PrivacyGroup } from "./PrivacyGroup.ts"
import { ProvidersGroup } from "./ProvidersGroup.ts"
import { ReceiptsGroup } from "./ReceiptsGroup.ts"
import { documentAsServed } from "./openApiEnvelope.ts"

export class Api extends HttpApi.make("svc")
  .add(ChatGroup)
  .add(EmbeddingsGroup)
  .add(ModelsGroup)
  .add(ReceiptsGroup)
  .add(ProvidersGroup)
  .add(PrivacyGroup)
  .add(AdminGroup)
  .addError(Wire.InvalidRequest)
  .addError(Wire.Unauthorized)
  .addError(Wire.NotFound)
  .addError(Wire.PayloadTooLarge)
  .addError(Wire.InternalError)
  .annotateContext(OpenApi.annotations({
    title: "svc gateway",
    version: "1",
    description: "Model-routing gateway: OpenAI-style chat completions and embeddings with exact billing and privacy classes.",
    transform: documentAsServed
  }))
{}
