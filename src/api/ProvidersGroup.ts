/**
 * `GET /v1/providers/health`: per model and privacy class, never naming a
 * provider; operator (admin-scope) keys also get one row per deployment.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { ProvidersHealth } from "./Records.ts"
import { MonitoringScope } from "./Security.ts"

export class ProvidersGroup extends HttpApiGroup.make("providers")
  .add(HttpApiEndpoint.get("providersHealth", "/v1/providers/health").addSuccess(ProvidersHealth))
  .middleware(MonitoringScope)
{}
