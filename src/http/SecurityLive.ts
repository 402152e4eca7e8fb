/**
 * Implementations of the bearer-key middleware. The raw `Authorization`
 * header is parsed here (HttpApi's own bearer decoder does not check the
 * scheme), then the key is resolved and its scope checked. `principalOf` is
 * the same check for the chat lane (src/http/lane/), which has no middleware.
 */
import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Unauthorized } from "../../services/ApiError.ts"
import { ApiKeys, type Principal, type Scope } from "../../services/ApiKeys.ts"
import { thenAtOnce } from "../../services/atOnce.ts"
import { type CallFacts, currentCall } from "../../services/CallStats.ts"
import { AdminScope, AgentsScope, AnyKey, ChatScope, MonitoringScope } from "../api/Security.ts"

const BEARER = /^Bearer +(\S+) *$/i

/**
 * The principal of an `Authorization` header: a key with any one of the `accepted` scopes gets in
 * (none listed: any valid key); a refusal names the first. Monitoring counts the call for the key's
 * account (src/http/callRecording.ts): in `call` when given (the chat lane's, with no step of its
 * own for a key this process keeps), else in the fiber's `currentCall`.
 */
export const principalOf = (
  keys: ApiKeys["Type"],
  accepted: ReadonlyArray<Scope>,
  authorization: string | undefined,
  call?: CallFacts
): Effect.Effect<Principal, Unauthorized> => {
  const token = BEARER.exec(authorization ?? "")?.[1]
  if (token === undefined) {
    return Effect.fail(new Unauthorized({ message: "Send your API key as `Authorization: Bearer <key>`." }))
  }
  return thenAtOnce(keys.authenticate(token), (principal) => {
    if (accepted.length > 0 && !accepted.some((scope) => principal.scopes.includes(scope))) {
      return Effect.fail(new Unauthorized({ message: `This endpoint needs a key with the "${accepted[0]}" scope.` }))
    }
    if (call !== undefined) return Effect.succeed(counted(call, principal))
    return Effect.withFiberRuntime<Principal>((fiber) => {
      const facts = fiber.getFiberRef(currentCall)
      return Effect.succeed(facts === null ? principal : counted(facts, principal))
    })
  })
}

const counted = (call: CallFacts, principal: Principal) => {
  if (principal.accountId !== null) {
    call.accountId = principal.accountId
    call.keyId = principal.keyId
  }
  return principal
}

const authenticate = (accepted: ReadonlyArray<Scope>) =>
  Effect.map(ApiKeys, (keys) => ({
    bearer: () =>
      Effect.flatMap(
        HttpServerRequest.HttpServerRequest,
        (request) => principalOf(keys, accepted, request.headers.authorization)
      )
  }))

export const SecurityLive = Layer.mergeAll(
  Layer.effect(AnyKey, authenticate([])),
  Layer.effect(ChatScope, authenticate(["chat"])),
  Layer.effect(AgentsScope, authenticate(["agents"])),
  Layer.effect(MonitoringScope, authenticate(["monitoring", "admin"])),
  Layer.effect(AdminScope, authenticate(["admin"]))
)
