/**
 * The API, declared once: the server, the tests' typed client and
 * `/openapi.json` all derive from this value. Errors every endpoint can
 * answer with are declared here, on the API.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { Wire } from "../../services/ApiError.ts"
import { AdminGroup } from "./AdminGroup.ts"
import { AgentRunsGroup } from "./AgentRunsGroup.ts"
import { AgentsGroup } from "./AgentsGroup.ts"
import { ChatGroup } from "./ChatGroup.ts"
import { EmbeddingsGroup } from "./EmbeddingsGroup.ts"
import { KeyGroup } from "./KeyGroup.ts"
import { LogsGroup } from "./LogsGroup.ts"
import { MetricsGroup } from "./MetricsGroup.ts"
import { ModelsGroup } from "./ModelsGroup.ts"
import { MonitoringGroup } from "./MonitoringGroup.ts"
import { PrivacyGroup } from "./PrivacyGroup.ts"
import { ProbesGroup } from "./ProbesGroup.ts"
import { ProvidersGroup } from "./ProvidersGroup.ts"
import { ReceiptsGroup } from "./ReceiptsGroup.ts"
import { ResponsesGroup } from "./ResponsesGroup.ts"
import { UsageGroup } from "./UsageGroup.ts"
import { documentAsServed } from "./openApiEnvelope.ts"

/** SPDX, as OpenAPI 3.1 allows (the field HttpApi's type lacks; `identifier` and `url` exclude each other). */
const LICENSE = { name: "Apache-2.0", identifier: "Apache-2.0" }

/** Relative first: the gateway that serves this document; then the default address of a local install. */
const SERVERS = [
  { url: "/", description: "The gateway serving this document" },
  { url: "http://127.0.0.1:8080", description: "A local install on its default address (HOST, PORT)" }
]

export class Api extends HttpApi.make("svc")
  .add(ChatGroup)
  .add(ResponsesGroup)
  .add(EmbeddingsGroup)
  .add(AgentsGroup)
  .add(AgentRunsGroup)
  .add(ModelsGroup)
  .add(KeyGroup)
  .add(ReceiptsGroup)
  .add(LogsGroup)
  .add(UsageGroup)
  .add(MonitoringGroup)
  .add(MetricsGroup)
  .add(ProvidersGroup)
  .add(PrivacyGroup)
  .add(AdminGroup)
  .add(ProbesGroup)
  .addError(Wire.InvalidRequest)
  .addError(Wire.Unauthorized)
  .addError(Wire.NotFound)
  .addError(Wire.PayloadTooLarge)
  .addError(Wire.InternalError)
  .annotateContext(OpenApi.annotations({
    title: "svc gateway",
    version: "1",
    description: "Model-routing gateway: OpenAI-style chat completions and embeddings with exact billing and privacy classes.",
    license: LICENSE,
    servers: SERVERS,
    transform: documentAsServed
  }))
{}
