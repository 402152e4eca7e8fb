/**
 * What every HTTP provider plugin shares: one undici connection pool per
 * provider with the configured timeouts, POSTs that are aborted when their
 * scope closes, and the mapping of transport errors and non-2xx answers to
 * `UpstreamFailure` (with `Retry-After` kept for the router).
 */
import { Clock, Effect, type Scope } from "effect"
import { Agent, type Dispatcher } from "undici"
import type { ProviderConfig } from "../../services/Config.ts"
import { ProviderConfigError, UpstreamFailure } from "../../services/Providers.ts"
import { errorKindOf, isRecord } from "./json.ts"
import { acquirePlainRelease } from "./plainRelease.ts"

export type ResponseData = Dispatcher.ResponseData

const timeoutCodes = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT", "ETIMEDOUT"])

/** A transport error (no answer, or the answer broke off) as a failure. */
export const failureOf = (error: unknown): UpstreamFailure => {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined
  const detail = `${error instanceof Error ? error.message : String(error)}${typeof code === "string" ? ` (${code})` : ""}`
  return new UpstreamFailure({ kind: typeof code === "string" && timeoutCodes.has(code) ? "timeout" : "connection", detail })
}

/** How much of an error body is read to tell what it says. */
const ERROR_BODY_BYTES = 16_384

/** What an error body's text says, without its free text (see `errorKindOf`); never fails. */
const errorTextKindOf = (text: string): string => {
  try {
    const json = JSON.parse(text)
    return errorKindOf(isRecord(json) && isRecord(json.error) ? json.error : json)
  } catch {
    // Not JSON, or broken: the status is what matters.
    return "unspecified"
  }
}

/** What an error body says, without its free text (see `errorKindOf`). Reads a bounded prefix; never fails. */
const errorBodyKindOf = async (body: AsyncIterable<Uint8Array>): Promise<string> => {
  const decoder = new TextDecoder()
  let text = ""
  try {
    for await (const bytes of body) {
      text += decoder.decode(bytes, { stream: true })
      if (text.length > ERROR_BODY_BYTES) break
    }
  } catch {
    return "unspecified"
  }
  return errorTextKindOf(text)
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date, against `nowMillis` from `Clock`), when present and sane. */
export const retryAfterSeconds = (header: string | ReadonlyArray<string> | undefined, nowMillis: number) => {
  const value = Array.isArray(header) ? header[0] : header
  if (typeof value !== "string" || value.trim() === "") return undefined
  const seconds = /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : (Date.parse(value) - nowMillis) / 1000
  return Number.isFinite(seconds) ? Math.max(0, seconds) : undefined
}

/** A non-2xx answer, as far as a failure tells it: its status, `Retry-After`, and what its body says. */
interface StatusAnswer {
  readonly status: number
  readonly retryAfter: string | ReadonlyArray<string> | undefined
  readonly kind: string
}

const statusAnswerOf = async (response: ResponseData): Promise<StatusAnswer> => ({
  status: response.statusCode,
  retryAfter: response.headers["retry-after"],
  kind: await errorBodyKindOf(response.body)
})

/** A non-2xx answer as a failure (`Retry-After` read against the `Clock`). */
const statusFailureOf = (answer: StatusAnswer) =>
  Effect.flatMap(Clock.currentTimeMillis, (nowMillis) => {
    const retryAfter = retryAfterSeconds(answer.retryAfter, nowMillis)
    return new UpstreamFailure({
      kind: "status",
      status: answer.status,
      detail: `upstream answered ${answer.status}${answer.kind ? ` (${answer.kind})` : ""}`,
      ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {})
    })
  })

/** A non-2xx answer as a failure. */
const statusFailure = (response: ResponseData) =>
  Effect.flatMap(Effect.promise(() => statusAnswerOf(response)), statusFailureOf)

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
   * POSTs JSON to `path` on `origin`; fails on transport errors and non-2xx answers. The request
   * is aborted when the scope closes.
   */
  readonly post: (
    path: string,
    body: unknown,
    headers: Record<string, string>
  ) => Effect.Effect<ResponseData, UpstreamFailure, Scope.Scope>
  /**
   * POSTs JSON and reads the whole 2xx answer as text; fails as `post` does. Interrupted, it aborts
   * the request. No scope and no stream: one handler from request to body (`wholeAnswer`), the
   * cheaper way for a whole answer.
   */
  readonly postText: (path: string, body: unknown, headers: Record<string, string>) => Effect.Effect<string, UpstreamFailure>
}

/**
 * Why a request's signal is aborted when its scope closes. Given once: without a reason, every
 * abort builds a new DOMException with its stack, which costs more than the rest of the release.
 */
const RELEASED = new Error("the call's scope closed")

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
    (agent) => ({
      post: (path, body, headers) =>
        Effect.gen(function*() {
          const controller = yield* acquirePlainRelease(
            Effect.sync(() => new AbortController()),
            (controller) => Effect.sync(() => controller.abort(RELEASED))
          )
          const response = yield* Effect.tryPromise({
            try: () =>
              agent.request({ origin, path, method: "POST", headers, body: JSON.stringify(body), signal: controller.signal }),
            catch: failureOf
          })
          if (response.statusCode < 200 || response.statusCode >= 300) return yield* statusFailure(response)
          return response
        }),
      postText: (path, body, headers) =>
        Effect.flatMap(
          wholeAnswer(agent, { origin, path, method: "POST", headers, body: JSON.stringify(body) }),
          (answer) => (typeof answer === "string" ? Effect.succeed(answer) : statusFailureOf(answer))
        )
    })
  )

/**
 * One request read to its end through undici's handler interface: a 2xx answer's body as text,
 * else the status answer (a bounded prefix of its body read). No `Readable` body, promise or
 * abort signal per request: the chunks are kept as they come and joined once. Interrupted, the
 * request is aborted.
 */
const wholeAnswer = (agent: Agent, options: Dispatcher.DispatchOptions) =>
  Effect.async<string | StatusAnswer, UpstreamFailure>((resume) => {
    let controller: Dispatcher.DispatchController | undefined
    let interrupted = false
    let status = 0
    let retryAfter: string | ReadonlyArray<string> | undefined
    const chunks: Array<Buffer> = []
    let bytes = 0
    agent.dispatch(options, {
      onRequestStart: (started) => {
        if (interrupted) started.abort(RELEASED)
        else controller = started
      },
      onResponseStart: (_, statusCode, headers) => {
        status = statusCode
        retryAfter = headers["retry-after"]
      },
      onResponseData: (_, chunk) => {
        const ok = status >= 200 && status < 300
        if (!ok && bytes > ERROR_BODY_BYTES) return
        chunks.push(chunk)
        bytes += chunk.length
      },
      onResponseEnd: () => {
        const text = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks, bytes).toString("utf8")
        resume(Effect.succeed(
          status >= 200 && status < 300 ? text : { status, retryAfter, kind: errorTextKindOf(text.slice(0, ERROR_BODY_BYTES)) }
        ))
      },
      onResponseError: (_, error) => {
        if (!interrupted) resume(Effect.fail(failureOf(error)))
      }
    })
    return Effect.sync(() => {
      interrupted = true
      controller?.abort(RELEASED)
    })
  })
