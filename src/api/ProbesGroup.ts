/**
 * Probes for load balancers and orchestrators, without a key: liveness
 * (`/healthz`, the process answers) and readiness (`/readyz`, the database
 * answers and carries this build's schema). Neither says anything about
 * accounts, models or providers.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Wire } from "../../services/ApiError.ts"
import { documented } from "./operationDocs.ts"

export const Liveness = Schema.Struct({ status: Schema.Literal("ok") }).annotations({ identifier: "Liveness" })

export const ReadinessRecord = Schema.Struct({
  status: Schema.Literal("ready"),
  /** The newest schema migration the database holds. */
  migration: Schema.Int
}).annotations({ identifier: "Readiness" })

export class ProbesGroup extends HttpApiGroup.make("probes")
  .add(
    HttpApiEndpoint.get("liveness", "/healthz")
      .addSuccess(Liveness)
      .annotateContext(documented("Liveness", "200 while the process serves HTTP; it reads nothing else. No key."))
  )
  .add(
    HttpApiEndpoint.get("readiness", "/readyz")
      .addSuccess(ReadinessRecord)
      .addError(Wire.ServiceUnavailable)
      .annotateContext(
        documented("Readiness", "200 when the database answers and holds every schema migration of this build; 503 otherwise. No key.")
      )
  )
  .annotate(OpenApi.Description, "Liveness and readiness probes for load balancers, without a key")
{}
