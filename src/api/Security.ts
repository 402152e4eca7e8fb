/**
 * Bearer-key middleware, one per scope an endpoint group needs. Each provides
 * the calling `Principal`; a missing, unknown, revoked or under-scoped key is
 * 401 `unauthorized`.
 */
import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Context } from "effect"
import { Wire } from "../../services/ApiError.ts"
import type { Principal } from "../../services/ApiKeys.ts"

export class CurrentPrincipal extends Context.Tag("svc/CurrentPrincipal")<CurrentPrincipal, Principal>() {}

const bearer = { bearer: HttpApiSecurity.bearer }

/** Any valid key (the catalogue). */
export class AnyKey extends HttpApiMiddleware.Tag<AnyKey>()("svc/AnyKey", {
  failure: Wire.Unauthorized,
  provides: CurrentPrincipal,
  security: bearer
}) {}

/** Keys with the `chat` scope (chat completions, agent runs, embeddings). */
export class ChatScope extends HttpApiMiddleware.Tag<ChatScope>()("svc/ChatScope", {
  failure: Wire.Unauthorized,
  provides: CurrentPrincipal,
  security: bearer
}) {}

/** Keys with the `agents` scope (creating agents and managing their knowledge). */
export class AgentsScope extends HttpApiMiddleware.Tag<AgentsScope>()("svc/AgentsScope", {
  failure: Wire.Unauthorized,
  provides: CurrentPrincipal,
  security: bearer
}) {}

/**
 * Keys with the `monitoring` scope (monitoring, usage, logs, receipts, provider health); operator
 * keys (`admin` scope) pass too, so the bootstrap key can watch the install it runs.
 */
export class MonitoringScope extends HttpApiMiddleware.Tag<MonitoringScope>()("svc/MonitoringScope", {
  failure: Wire.Unauthorized,
  provides: CurrentPrincipal,
  security: bearer
}) {}

/** Keys with the `admin` scope (the operator API). */
export class AdminScope extends HttpApiMiddleware.Tag<AdminScope>()("svc/AdminScope", {
  failure: Wire.Unauthorized,
  provides: CurrentPrincipal,
  security: bearer
}) {}
