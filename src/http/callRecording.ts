/**
 * The edge's part of monitoring and metrics: each request gets a `CallFacts`
 * cell (services/CallStats.ts) that the key check and settlement fill, and
 * when the answer has been sent — a JSON body at once, a stream at its last
 * byte (its first byte is the time to first token) — every request is
 * counted in the metrics by route, and a call of an account is counted for
 * monitoring. A call is a POST (chat, responses, embeddings, agent runs,
 * documents: what does work and may be billed); reads such as a dashboard's
 * polling are not calls, and requests no key vouched for belong to no account.
 * Every request also leaves one log line (request and key id, route, status,
 * latency, cost; never a prompt), JSON in production (src/start/logFormat.ts).
 */
import { HttpApp, HttpBody, HttpServerResponse } from "@effect/platform"
import { type Clock, Effect, type Fiber, FiberRef, Option, Stream } from "effect"
import { type CallFacts, type CallStats, currentCall } from "../../services/CallStats.ts"
import { formatUsd } from "../../services/Money.ts"
import type { Metrics } from "../../services/Metrics.ts"
import { logRequestLineIn, RequestLine } from "./requestLine.ts"
import { thenAtOnce } from "../../services/atOnce.ts"
import { routeOf } from "./routeNames.ts"

/** Paths are kept this long at most (a hostile caller's path is not stored whole). */
const MAX_ENDPOINT = 200

const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return (query < 0 ? url : url.slice(0, query)).slice(0, MAX_ENDPOINT)
}

/**
 * The request's cell and how to count it once its answer is sent (`ttftMs`: a stream's first byte);
 * the chat lane (src/http/lane/) uses it directly, the edge through `recordCall`.
 */
export const openCall = (
  stats: typeof CallStats.Service,
  metrics: Option.Option<typeof Metrics.Service>,
  requestId: string,
  clock: Clock.Clock
) => {
  const startedAt = clock.unsafeCurrentTimeMillis()
  const facts: CallFacts = { inputTokens: 0, outputTokens: 0, spend: 0n }
  /** Counts the request when called: in a step of `fiber` (an Exit when all of it is done then). */
  const countIn = (fiber: Fiber.RuntimeFiber<unknown, unknown>, method: string, url: string, status: number, ttftMs: number | undefined) => {
    const now = clock.unsafeCurrentTimeMillis()
    const route = routeOf(url)
    if (Option.isSome(metrics)) {
      metrics.value.requestEnded({
        route,
        method,
        status,
        model: facts.model ?? "none",
        privacyClass: facts.privacyClass ?? "none"
      }, (now - startedAt) / 1000)
    }
    const accountId = facts.accountId
    const logged = logRequestLineIn(
      fiber,
      new RequestLine({
        request_id: requestId,
        key_id: facts.keyId ?? null,
        account_id: accountId ?? null,
        method,
        route,
        status,
        code: status >= 400 ? facts.code ?? null : null,
        latency_ms: now - startedAt,
        ttft_ms: ttftMs ?? null,
        model: facts.model ?? null,
        cost_usd: formatUsd(facts.spend)
      }),
      now
    )
    if (accountId === undefined || method !== "POST") return logged
    return thenAtOnce(logged, () => stats.record({
      requestId,
      accountId,
      keyId: facts.keyId,
      endpoint: pathOf(url),
      status,
      code: status >= 400 ? facts.code : undefined,
      latencyMs: now - startedAt,
      ttftMs,
      inputTokens: facts.inputTokens,
      outputTokens: facts.outputTokens,
      spend: facts.spend,
      endedAt: now
    }))
  }
  /** Counts the request once the count runs (a stream's, at its end). */
  const count = (method: string, url: string, status: number, ttftMs: number | undefined) =>
    Effect.withFiberRuntime((fiber) => countIn(fiber, method, url, status, ttftMs))
  return { facts, startedAt, count, countIn }
}

/** Opens the request's cell and arranges for the request to be counted when its answer is sent. */
export const recordCall = (
  stats: typeof CallStats.Service,
  metrics: Option.Option<typeof Metrics.Service>,
  requestId: string
) =>
  Effect.gen(function*() {
    const clock = yield* Effect.clock
    const { count, facts, startedAt } = openCall(stats, metrics, requestId, clock)
    yield* FiberRef.set(currentCall, facts)
    yield* HttpApp.appendPreResponseHandler((request, response) => {
      const body = response.body
      if (body._tag !== "Stream") return Effect.as(count(request.method, request.url, response.status, undefined), response)
      let firstByteMs: number | undefined
      const stream = body.stream.pipe(
        // Synchronous: no Effect per chunk of a stream.
        Stream.mapChunks((chunk) => {
          firstByteMs ??= clock.unsafeCurrentTimeMillis() - startedAt
          return chunk
        }),
        Stream.ensuring(Effect.suspend(() => count(request.method, request.url, response.status, firstByteMs)))
      )
      return Effect.succeed(HttpServerResponse.setBody(response, HttpBody.stream(stream, body.contentType, body.contentLength)))
    })
    return facts
  })
