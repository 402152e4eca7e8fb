/**
 * `GET /v1/providers/health`: per model and privacy class, never naming a
 * provider; operator (admin-scope) keys also get one row per deployment.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { ProvidersHealth } from "./Records.ts"
import { documented } from "./operationDocs.ts"
import { MonitoringScope } from "./Security.ts"

export class ProvidersGroup extends HttpApiGroup.make("providers")
  .add(
    HttpApiEndpoint.get("providersHealth", "/v1/providers/health")
      .addSuccess(ProvidersHealth)
      .annotateContext(documented("Get routing health", "Availability, error rates and latency per model and privacy class."))
  )
  .annotate(OpenApi.Description, "Routing health and fallback data, never naming an upstream provider")
  .middleware(MonitoringScope)
{}
