/** `GET /v1/key`: the calling key as the key check resolved it. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"

export const KeyHandlers = HttpApiBuilder.group(Api, "key", (handlers) =>
  Effect.succeed(handlers.handle("getKey", () =>
    Effect.map(CurrentPrincipal, (principal) => ({
      object: "key" as const,
      id: principal.keyId,
      account_id: principal.accountId,
      scopes: principal.scopes,
      rpm: principal.rpm ?? null,
      tpm: principal.tpm ?? null
    })))))
