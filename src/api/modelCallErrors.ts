/**
 * The errors of endpoints that call a model, declared once: chat and
 * responses (the hold 402, idempotency 409, limits 429, the privacy class
 * 422, the upstream or our database failing 502, 503, 504), and the agent
 * endpoints that embed knowledge (the same without idempotency).
 */
import type { HttpApiEndpoint } from "@effect/platform"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import { Wire } from "../../services/ApiError.ts"

export const withEmbeddingErrors = <
  Name extends string,
  Method extends HttpMethod,
  Path,
  UrlParams,
  Payload,
  Headers,
  Success,
  Error,
  R,
  RE
>(endpoint: HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, UrlParams, Payload, Headers, Success, Error, R, RE>) =>
  endpoint
    .addError(Wire.InsufficientFunds)
    .addError(Wire.RateLimited)
    .addError(Wire.PrivacyClassUnavailable)
    .addError(Wire.UpstreamError)
    .addError(Wire.ServiceUnavailable)
    .addError(Wire.UpstreamTimeout)

export const withModelCallErrors = <
  Name extends string,
  Method extends HttpMethod,
  Path,
  UrlParams,
  Payload,
  Headers,
  Success,
  Error,
  R,
  RE
>(endpoint: HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, UrlParams, Payload, Headers, Success, Error, R, RE>) =>
  endpoint
    .addError(Wire.Conflict)
    .pipe(withEmbeddingErrors)
