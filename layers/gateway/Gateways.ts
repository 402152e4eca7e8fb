/**
 * The chat and embeddings gateways over the call pipeline's stages
 * (docs/architecture.md), needing only the services beneath them (catalogue,
 * health, ledger, event log, …): the app provides the real ones, unit tests
 * the in-memory ones.
 */
import { Layer } from "effect"
import { AdmissionLive } from "../admission/AdmissionLive.ts"
import { BillingLive } from "../billing/BillingLive.ts"
import { CallRecorderLive } from "../events/CallRecorderLive.ts"
import { PrivacyPolicyLive } from "../privacy/PrivacyPolicyLive.ts"
import { RoutePlannerLive } from "../routing/RoutePlannerLive.ts"
import { UpstreamLive } from "../upstream/UpstreamLive.ts"
import { ChatGatewayLive } from "./ChatGatewayLive.ts"
import { EmbeddingsGatewayLive } from "./EmbeddingsGatewayLive.ts"

export const Gateways = Layer.mergeAll(ChatGatewayLive, EmbeddingsGatewayLive).pipe(
  Layer.provideMerge(Layer.mergeAll(AdmissionLive, RoutePlannerLive)),
  Layer.provideMerge(Layer.mergeAll(PrivacyPolicyLive, BillingLive, UpstreamLive, CallRecorderLive))
)
