/**
 * Implementations of the bearer-key middleware. The raw `Authorization`
 * header is parsed here (HttpApi's own bearer decoder does not check the
 * scheme), then the key is resolved and its scope checked.
 */
import { HttpServerRequest } from "@effect/platform"
import { Effect, FiberRef, Layer } from "effect"
import { Unauthorized } from "../../services/ApiError.ts"
import { ApiKeys, type Scope } from "../../services/ApiKeys.ts"
import { currentCall } from "../../services/CallStats.ts"
import { AdminScope, AgentsScope, AnyKey, ChatScope, MonitoringScope } from "../api/Security.ts"

const BEARER = /^Bearer +(\S+) *$/i

/** A key with any one of the `accepted` scopes gets in (none listed: any valid key); a refusal names the first. */
const authenticate = (accepted: ReadonlyArray<Scope>) =>
  Effect.map(ApiKeys, (keys) => ({
    bearer: () =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const token = BEARER.exec(request.headers.authorization ?? "")?.[1]
        if (token === undefined) {
          return yield* new Unauthorized({ message: "Send your API key as `Authorization: Bearer <key>`." })
        }
        const principal = yield* keys.authenticate(token)
        if (accepted.length > 0 && !accepted.some((scope) => principal.scopes.includes(scope))) {
          return yield* new Unauthorized({ message: `This endpoint needs a key with the "${accepted[0]}" scope.` })
        }
        // Monitoring counts the call for this key's account (src/http/callRecording.ts).
        const call = yield* FiberRef.get(currentCall)
        if (call !== null && principal.accountId !== null) {
          call.accountId = principal.accountId
          call.keyId = principal.keyId
        }
        return principal
      })
  }))

export const SecurityLive = Layer.mergeAll(
  Layer.effect(AnyKey, authenticate([])),
  Layer.effect(ChatScope, authenticate(["chat"])),
  Layer.effect(AgentsScope, authenticate(["agents"])),
  Layer.effect(MonitoringScope, authenticate(["monitoring", "admin"])),
  Layer.effect(AdminScope, authenticate(["admin"]))
)
