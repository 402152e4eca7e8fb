/**
 * What every HTTP provider plugin shares: one undici connection pool per
 * provider with the configured timeouts, POSTs whose answers are read
 * through undici's handler interface (answerReading.ts, streamedAnswer.ts)
 * and aborted when their call lets go of them, and non-2xx answers as
 * `UpstreamFailure` (with `Retry-After` kept for the router).
 */
import { type Clock, Effect, Scope } from "effect"
import { Agent } from "undici"
import type { ProviderConfig } from "../../services/Config.ts"
import { ProviderConfigError, type UpstreamFailure } from "../../services/Providers.ts"
import { statusFailureOf, wholeAnswer } from "./answerReading.ts"
import { streamedAnswer, type UpstreamBody } from "./streamedAnswer.ts"

export { retryAfterSeconds } from "./answerReading.ts"

const asText = (text: string) => text

/** `baseUrl` split for undici: the origin, and the path prefix without a trailing slash. */
export const baseUrlOf = (provider: ProviderConfig, plugin: string, fallback?: string) => {
  const baseUrl = provider.baseUrl ?? fallback
  if (baseUrl === undefined) {
    return Effect.fail(new ProviderConfigError({ field: "baseUrl", reason: `the ${plugin} plugin needs a baseUrl` }))
  }
  return Effect.try({
    try: () => {
      const url = new URL(baseUrl)
      return { origin: url.origin, basePath: url.pathname.replace(/\/+$/, "") }
    },
    catch: () => new ProviderConfigError({ field: "baseUrl", reason: `not a valid URL: ${baseUrl}` })
  })
}

/** The provider's key from the environment variable its config names (none when it names none). */
export const apiKeyOf = (provider: ProviderConfig, env: Readonly<Record<string, string | undefined>>) => {
  if (provider.apiKeyEnv === undefined) return Effect.succeed(undefined)
  const key = env[provider.apiKeyEnv]
  return key ? Effect.succeed(key) : Effect.fail(
    new ProviderConfigError({ field: "apiKeyEnv", reason: `environment variable ${provider.apiKeyEnv} is not set` })
  )
}

/** Request headers for JSON answers and for SSE answers, with the provider's own (auth, version) added. */
export const requestHeaders = (own: Record<string, string>) => {
  const headersFor = (accept: string): Record<string, string> => ({ "content-type": "application/json", accept, ...own })
  return { json: headersFor("application/json"), sse: headersFor("text/event-stream") }
}

export interface UpstreamHttp {
  /**
   * POSTs JSON to `path` on `origin` and hands over the 2xx answer's body as it streams in; fails on
   * transport errors and non-2xx answers, and as a `timeout` if its head has not come by `endAt`
   * (epoch ms, `Clock`). The body is released (its request aborted unless it completed) when the
   * scope closes, if it was not before.
   */
  readonly postStream: (
    path: string,
    body: unknown,
    headers: Record<string, string>,
    endAt?: number
  ) => Effect.Effect<UpstreamBody, UpstreamFailure, Scope.Scope>
  /**
   * POSTs JSON and reads the whole 2xx answer as text; fails as `postStream` does, and as a
   * `timeout` if not done by `endAt` (epoch ms, `Clock`). Interrupted, it aborts the request. No
   * scope: one handler from request to body.
   */
  readonly postText: (
    path: string,
    body: unknown,
    headers: Record<string, string>,
    endAt?: number
  ) => Effect.Effect<string, UpstreamFailure>
  /**
   * As `postText`, the answer's text read with `read` as it ends (a throw is the upstream's
   * `protocol` failure): the request and its decoded answer in one step (every JSON call).
   */
  readonly postReading: <A>(
    path: string,
    body: unknown,
    headers: Record<string, string>,
    read: (text: string, clock: Clock.Clock) => A,
    endAt?: number
  ) => Effect.Effect<A, UpstreamFailure>
}

/** One connection pool for a provider, closed with the scope. */
export const makeUpstreamHttp = (origin: string, timeoutMs: number): Effect.Effect<UpstreamHttp, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() =>
        new Agent({
          keepAliveTimeout: 30_000,
          connect: { timeout: timeoutMs },
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs
        })
      ),
      // Requests still running belong to scopes that are closing too.
      (agent) => Effect.promise(() => agent.destroy().catch(() => undefined))
    ),
    (agent) => {
      const postReading: UpstreamHttp["postReading"] = (path, body, headers, read, endAt) =>
        wholeAnswer(agent, { origin, path, method: "POST", headers, body: JSON.stringify(body) }, read, endAt)
      return {
        postStream: (path, body, headers, endAt) =>
          Effect.flatMap(Effect.scope, (scope) =>
            Effect.clockWith((clock) => {
              const answer = streamedAnswer(agent, { origin, path, method: "POST", headers, body: JSON.stringify(body) }, clock, endAt)
              // On the scope as it is: no fiber refs restored around a release that only aborts (plainRelease.ts).
              return Effect.zipRight(
                Scope.addFinalizer(scope, Effect.sync(answer.body.release)),
                Effect.flatMap(answer.head, (status) =>
                  status === undefined ? Effect.succeed(answer.body) : Effect.fail(statusFailureOf(status, clock.unsafeCurrentTimeMillis())))
              )
            })),
        postText: (path, body, headers, endAt) => postReading(path, body, headers, asText, endAt),
        postReading
      }
    }
  )
