/** `GET /v1/providers/health` (providerHealth.ts). */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { isAdmin } from "./accountSelector.ts"
import { providersHealth } from "./providerHealth.ts"

export const ProvidersHandlers = HttpApiBuilder.group(Api, "providers", (handlers) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<Effect.Effect.Context<ReturnType<typeof providersHealth>>>()
    return handlers.handle("providersHealth", () =>
      Effect.flatMap(CurrentPrincipal, (principal) => Effect.provide(providersHealth(isAdmin(principal)), context)))
  }))
