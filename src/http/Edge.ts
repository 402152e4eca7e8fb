/**
 * The edge every request passes: it names the request (`x-request-id`),
 * sends the caller's rate-limit status (`x-ratelimit-*`), enforces the body limit, and turns every failure that is not already one of
 * our errors (unknown route, malformed or oversized body, schema mismatch,
 * defects) into one, so every error leaves in the contract's envelope; a
 * database outage is 503 `service_unavailable` with `Retry-After`.
 */
import { FileSystem, Headers, HttpApiBuilder, HttpApp, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import { MaxBodySize } from "@effect/platform/HttpIncomingMessage"
import { Cause, Effect, FiberRef, Option } from "effect"
import {
  type ApiError,
  codeOf,
  currentRequestId,
  InternalError,
  InvalidRequest,
  isApiError,
  NotFound,
  PayloadTooLarge
} from "../../services/ApiError.ts"
import { Billing } from "../../services/Billing.ts"
import { CallStats } from "../../services/CallStats.ts"
import { DatabaseStatus, isDatabaseOutage } from "../../services/DatabaseStatus.ts"
import type { ConfigFile } from "../../services/Config.ts"
import { fieldPath } from "../../services/fieldPath.ts"
import { Metrics } from "../../services/Metrics.ts"
import { currentRateLimits, type RateLimitStatus } from "../../services/RateLimiter.ts"
import { Ids } from "../../services/Ids.ts"
import { clip, quote } from "../../services/quote.ts"
import { Api } from "../api/Api.ts"
import { recordCall } from "./callRecording.ts"
import { withCheckedJson } from "./checkedJson.ts"
import { withChunkedBody } from "./chunkedBody.ts"
import { rateLimitHeaders } from "./rateLimitHeaders.ts"

const tooLarge = (limit: number) =>
  new PayloadTooLarge({ message: `The request body is larger than the limit of ${limit} bytes.` })

/** Schema's issue message ends with the value it got (`…, actual "…"`): only a short prefix of that is kept. */
const shortIssue = (message: string) => {
  const at = message.indexOf(", actual ")
  return at < 0 ? clip(message, 200) : `${clip(message.slice(0, at), 150)}, actual ${quote(message.slice(at + 9))}`
}

const fromDecodeError = (error: HttpApiDecodeError) => {
  const [issue] = error.issues
  const param = issue === undefined || issue.path.length === 0 ? null : fieldPath(issue.path)
  return new InvalidRequest({
    message: issue === undefined ? "The request does not match the API." : `${param ?? "body"}: ${shortIssue(issue.message)}`,
    param
  })
}

const internalError = new InternalError({ message: "Something went wrong on our side; the request was not completed." })

/**
 * Maps whatever failed into an error a caller may see; unexpected ones are logged and become 500.
 * A database outage is 503 with `Retry-After`, logged once per change by `database`, not per request.
 */
export const toApiError = (limit: number, database?: DatabaseStatus["Type"]) => (cause: Cause.Cause<unknown>): Effect.Effect<ApiError> => {
  const error = Cause.squash(cause)
  if (isApiError(error)) return Effect.succeed(error)
  if (database !== undefined && isDatabaseOutage(cause)) return Effect.as(database.observe(cause), database.unavailable())
  if (error instanceof HttpApiDecodeError) return Effect.succeed(fromDecodeError(error))
  if (HttpServerError.isServerError(error) && error._tag === "RouteNotFound") {
    return Effect.succeed(new NotFound({ message: `No route ${quote(error.request.method, 16)} ${quote(error.request.url)}.` }))
  }
  if (HttpServerError.isServerError(error) && error._tag === "RequestError") {
    if (String((error.cause as Error | undefined)?.message).includes("maxBytes exceeded")) {
      return Effect.succeed(tooLarge(limit))
    }
    if (error.cause instanceof SyntaxError) {
      return Effect.succeed(new InvalidRequest({ message: `The body is not valid JSON: ${quote(error.cause.message, 120)}` }))
    }
  }
  // The caller went away (it closed the connection mid-request): nobody reads the answer, nothing to log.
  if (Cause.isInterruptedOnly(cause)) return Effect.succeed(internalError)
  return Effect.logError("unexpected failure", cause).pipe(
    Effect.as(internalError)
  )
}

/**
 * Every body we accept is JSON; callers such as `curl -d` label it as a form,
 * so the body is read as JSON whatever its content type says.
 */
const asJson = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers["content-type"]?.includes("application/json") === true
    ? request
    : request.modify({ headers: Headers.set(request.headers, "content-type", "application/json") })

/** A NUL in a path (`%00`) could only reach the database, which refuses it. */
const NUL_IN_PATH = /%00|\u0000/i

/** The API-level middleware; the body limits from the config (`limits`). */
export const edgeMiddleware = ({ maxArrayItems, maxBodyBytes, maxJsonDepth }: ConfigFile["limits"]) =>
  HttpApiBuilder.middleware(Api, Effect.map(Effect.all([Ids, DatabaseStatus, CallStats, Effect.serviceOption(Metrics), Effect.serviceOption(Billing)]), ([ids, database, stats, metrics, billing]) => (app: HttpApp.Default) =>
    Effect.gen(function*() {
      const requestId = ids.make("req")
      // Set on the fiber (not `locally`) so the error encoder, which runs after us, still sees it.
      yield* FiberRef.set(currentRequestId, requestId)
      const call = yield* recordCall(stats, metrics, requestId)
      // Filled by the rate limiter if the call is counted against a limited key (the same object, seen by child fibers).
      const limits: RateLimitStatus = {}
      yield* FiberRef.set(currentRateLimits, limits)
      yield* HttpApp.appendPreResponseHandler((_, response) =>
        Effect.succeed(
          limits.requests === undefined && limits.tokens === undefined
            ? HttpServerResponse.setHeader(response, "x-request-id", requestId)
            : HttpServerResponse.setHeaders(response, { ...rateLimitHeaders(limits), "x-request-id": requestId })
        )
      )
      let request = asJson(yield* HttpServerRequest.HttpServerRequest)
      if (NUL_IN_PATH.test(request.url)) {
        return yield* new InvalidRequest({ message: "The path contains a NUL character (%00)." })
      }
      const declared = request.headers["content-length"]
      if (Number(declared ?? 0) > maxBodyBytes) return yield* Effect.fail(tooLarge(maxBodyBytes))
      if (declared === undefined && request.headers["transfer-encoding"] !== undefined) {
        const read = yield* withChunkedBody(request, maxBodyBytes)
        if (read === undefined) return yield* Effect.fail(tooLarge(maxBodyBytes))
        request = read
      }
      request = withCheckedJson(request, { maxDepth: maxJsonDepth, maxArrayItems })
      // A read sees every call this process answered before it: their settlements are written first.
      if (request.method === "GET" && Option.isSome(billing)) yield* billing.value.settled
      return yield* app.pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, request),
        Effect.provideService(MaxBodySize, Option.some(FileSystem.Size(maxBodyBytes))),
        Effect.catchAllCause((cause) =>
          Effect.flatMap(toApiError(maxBodyBytes, database)(cause), (error) => {
            call.code = codeOf(error)
            return Effect.zipRight(
              "retryAfterSeconds" in error && error.retryAfterSeconds !== undefined
                ? HttpApp.appendPreResponseHandler((_, response) =>
                  Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", String(error.retryAfterSeconds)))
                )
                : Effect.void,
              Effect.fail(error)
            )
          })
        )
      )
      // Endpoint-level errors pass through unchanged; the typing only knows the API-level ones.
    }) as Effect.Effect<HttpServerResponse.HttpServerResponse, InvalidRequest, HttpServerRequest.HttpServerRequest>))
