/**
 * The chat lane: `POST /v1/chat/completions` served straight from Node's
 * request event, without HttpApi's router and middleware chain, which cost
 * more CPU per call than the whole pipeline behind them (docs/performance.md).
 * It does what the edge, the key middleware and the endpoint's decoding do
 * for this one route — request id, call record, key and scope, body shape,
 * the declared schemas, the envelope of every error — and answers through the
 * same `makeChatCompletion` as the API's handler. Anything unusual (no
 * `content-length`, a body over the limit, a query string, a browser's
 * cross-origin call, traces on) is left to the app, which answers it as
 * before. The route stays declared once, in src/api/ChatGroup.ts.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { HttpServerResponse } from "@effect/platform"
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import { Context, Effect, type Fiber, FiberId, FiberRef, Layer, ParseResult, Runtime, RuntimeFlags, Schema, Scope } from "effect"
import { codeOf, currentRequestId, envelopeOf, statusOf } from "../../../services/ApiError.ts"
import { thenAtOnce } from "../../../services/atOnce.ts"
import { type CallEnds, currentCallEnds, emptyCallEnds, inCallScope } from "../../../services/callEnds.ts"
import { ApiKeys } from "../../../services/ApiKeys.ts"
import { type CallFacts, CallStats, currentCall } from "../../../services/CallStats.ts"
import { ChatRequest } from "../../../services/Chat.ts"
import { AppConfig } from "../../../services/Config.ts"
import { DatabaseStatus } from "../../../services/DatabaseStatus.ts"
import { Ids } from "../../../services/Ids.ts"
import { Metrics } from "../../../services/Metrics.ts"
import { currentRateLimits, type RateLimitStatus } from "../../../services/RateLimiter.ts"
import { IdempotencyHeaders } from "../../api/IdempotencyHeader.ts"
import { type ChatAnswer, makeChatCompletion } from "../../handlers/chatCompletion.ts"
import { openCall } from "../callRecording.ts"
import { checkedJson } from "../checkedJson.ts"
import { toApiError } from "../Edge.ts"
import { addRateLimitHeaders } from "../rateLimitHeaders.ts"
import { principalOf } from "../SecurityLive.ts"
import { callFiberRefs } from "./callFiberRefs.ts"
import { freshScopes } from "./freshScopes.ts"
import { laneScheduler } from "./laneScheduler.ts"
import { ServerWithLane } from "./laneServer.ts"
import { plainChatRequest } from "./plainChatRequest.ts"
import { writeJson, writeResponse } from "./writeResponse.ts"

const PATH = "/v1/chat/completions"

const decodePayload = Schema.decodeUnknown(ChatRequest)
const decodeHeaders = Schema.decodeUnknown(IdempotencyHeaders)

/** A decoding's refusal as HttpApi's own (400 with the schema's issues). */
const decodedAsTheApp = <A, R>(decoded: Effect.Effect<A, ParseResult.ParseError, R>) =>
  Effect.catchAll(decoded, HttpApiDecodeError.refailParseError)

/** Reads the whole body (its length is declared and within the limit), then `then`. */
const readBody = (request: IncomingMessage, then: (text: string) => void) => {
  const parts: Array<Buffer> = []
  request.on("data", (part: Buffer) => parts.push(part))
  request.on("end", () => then(parts.length === 1 ? parts[0]!.toString() : Buffer.concat(parts).toString()))
}

export const ChatLane = Layer.scopedDiscard(Effect.gen(function*() {
  const { env, file } = yield* AppConfig
  const server = yield* ServerWithLane
  // Spans per request need the app's tracing middleware: with traces exported, the app serves every call.
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT) return
  const { maxArrayItems, maxBodyBytes, maxJsonDepth } = file.limits
  const crossOrigin = file.cors.origins.length > 0
  const [ids, database, stats, metrics, keys, chat, clock] = yield* Effect.all([
    Ids,
    DatabaseStatus,
    CallStats,
    Effect.serviceOption(Metrics),
    ApiKeys,
    makeChatCompletion,
    Effect.clock
  ])
  // Traces are off whenever the lane serves (above): spans would be made and dropped. Off in the
  // runtime the calls start from, not per call (`withTracerEnabled` is a fiber-ref change to undo).
  const runtime = yield* Effect.withTracerEnabled(Effect.runtime<never>(), false)
  // A call's fiber starts with no services in its context: its effect requires none (every service
  // was taken when the layers were built, which the types check), so its own scope is all it gets.
  // With the app's ~50 services there, adding the scope copied them all on every call.
  // Without Effect's own fiber metrics (two counters as a fiber starts, a histogram of 100 buckets as it
  // ends: nothing reads them, src/main.ts), for the call's fiber and every fiber it forks.
  // Each call's fiber gets the runtime's refs as one copy of a template, with its own set (callFiberRefs.ts).
  const fiberRefs = callFiberRefs(runtime, RuntimeFlags.disable(runtime.runtimeFlags, RuntimeFlags.RuntimeMetrics), laneScheduler)
  const runFork = Runtime.runFork(fiberRefs.runtime)
  const errorOf = toApiError(maxBodyBytes, database)
  const nextScope = freshScopes()

  /**
   * What the API's handler would answer, errors included (as the edge and HttpApi encode them): the
   * key, then the body, then the headers, as the app checks them. A chain, not a generator: it runs
   * on every call.
   */
  const answer = (request: IncomingMessage, text: string, call: CallFacts) =>
    thenAtOnce(principalOf(keys, ["chat"], request.headers.authorization, call), (principal) =>
      thenAtOnce(checkedJson(text, { maxDepth: maxJsonDepth, maxArrayItems }), (json) => {
        // Without an `Idempotency-Key`, the headers' schema has nothing to decode.
        const withPayload = (payload: ChatRequest) =>
          request.headers["idempotency-key"] === undefined
            ? chat(payload, undefined, principal)
            : Effect.flatMap(decodedAsTheApp(decodeHeaders(request.headers)), (headers) =>
              chat(payload, headers["idempotency-key"], principal))
        const plain = plainChatRequest(json)
        return plain !== undefined ? withPayload(plain) : Effect.flatMap(decodedAsTheApp(decodePayload(json)), withPayload)
      }))

  /** A call's own fiber refs (its request id, monitoring cell, rate-limit status, and ends with its scope), set as its fiber is made. */
  type CallRefs = {
    readonly requestId: string
    readonly call: ReturnType<typeof openCall>
    readonly limits: RateLimitStatus
    readonly ends: CallEnds
  }

  /**
   * The answer (or the error's envelope), then its head and the call's count, then the body. Made in
   * the fiber's first step, which a JSON answer's count is done in too, with no step of its own.
   */
  const serve = (request: IncomingMessage, response: ServerResponse, text: string, refs: CallRefs) =>
    Effect.withFiberRuntime((fiber) =>
      Effect.matchCauseEffect(answer(request, text, refs.call.facts), {
        onSuccess: (answered) => written(fiber, response, answered, {}, refs),
        onFailure: (cause) =>
          Effect.flatMap(errorOf(cause), (error) => {
            refs.call.facts.code = codeOf(error)
            return written(
              fiber,
              response,
              { status: statusOf(error), headers: {}, body: envelopeOf(error, refs.requestId) },
              "retryAfterSeconds" in error && error.retryAfterSeconds !== undefined
                ? { "retry-after": String(error.retryAfterSeconds) }
                : {},
              refs
            )
          })
      })
    ).pipe(inCallScope(refs.ends))

  const written = (
    fiber: Fiber.RuntimeFiber<unknown, unknown>,
    response: ServerResponse,
    answered: ChatAnswer,
    extra: Record<string, string>,
    { call, limits, requestId }: CallRefs
  ) => {
    // Added in place, not spread: no object per part, no object with computed names (docs/performance.md).
    const headers: Record<string, string> = Object.assign({}, answered.headers, extra)
    addRateLimitHeaders(headers, limits)
    headers["x-request-id"] = requestId
    // Counted (metrics, call record, request line) once the answer is on its way, not before it.
    if (!HttpServerResponse.isServerResponse(answered)) {
      writeJson(response, answered.status, headers, answered.body)
      return call.countIn(fiber, "POST", PATH, answered.status, undefined)
    }
    if (answered.body._tag !== "Stream") {
      return Effect.zipRight(writeResponse(response, answered, headers), call.count("POST", PATH, answered.status, undefined))
    }
    let firstByteMs: number | undefined
    const firstByte = () => void (firstByteMs ??= clock.unsafeCurrentTimeMillis() - call.startedAt)
    return writeResponse(response, answered, headers, firstByte).pipe(
      Effect.ensuring(Effect.suspend(() => call.count("POST", PATH, answered.status, firstByteMs)))
    )
  }

  server.lane = (request, response) => {
    if (request.method !== "POST" || request.url !== PATH) return false
    const declared = request.headers["content-length"]
    if (declared === undefined || request.headers["transfer-encoding"] !== undefined) return false
    if (!(Number(declared) <= maxBodyBytes)) return false
    if (crossOrigin && request.headers.origin !== undefined) return false
    readBody(request, (text) => {
      const requestId = ids.make("req")
      const refs: CallRefs = {
        requestId,
        call: openCall(stats, metrics, requestId, clock),
        limits: {},
        ends: emptyCallEnds(nextScope())
      }
      // One copy of the new fiber's refs with all five, where a `FiberRef.set` each in the fiber copies them each time.
      const fiber = runFork(serve(request, response, text, refs), {
        updateRefs: (_, fiberId) =>
          fiberRefs.refsOf(fiberId, [
            [currentRequestId, requestId],
            [currentCall, refs.call.facts],
            [currentRateLimits, refs.limits],
            [currentCallEnds, refs.ends],
            [FiberRef.currentContext, Context.make(Scope.Scope, refs.ends.scope)]
          ])
      })
      response.on("close", () => {
        if (!response.writableEnded) fiber.unsafeInterruptAsFork(FiberId.none)
      })
    })
    return true
  }
  yield* Effect.addFinalizer(() => Effect.sync(() => void (server.lane = undefined)))
}))
