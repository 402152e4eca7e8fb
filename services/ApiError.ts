/**
 * The errors an API caller can see: one tagged error per fact. Each fact's
 * HTTP status and `code` are declared once, in `FACTS` below; the one encoder
 * (`Wire`) writes every one of them as the contract's envelope
 * `{"error":{"code","message","param","request_id"}}`. Nothing else in the
 * code base spells an error code.
 */
import { HttpApiSchema } from "@effect/platform"
import { Effect, FiberRef, ParseResult, Schema } from "effect"
import { globalValue } from "effect/GlobalValue"
import { PrivacyClass } from "./Config.ts"
import { clip } from "./quote.ts"

/** The id of the request being served (`req_...`); read when an error is encoded. */
export const currentRequestId = globalValue(
  "svc/currentRequestId",
  () => FiberRef.unsafeMake<string | null>(null)
)

/** What every error carries to the caller: the message and the request field at fault. */
const Shown = {
  message: Schema.String,
  param: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
}
/** Sent as the `Retry-After` header when set (not part of the body). */
const RetryAfter = { retryAfterSeconds: Schema.optional(Schema.Int) }

/** Malformed JSON, schema violation, unknown model, a capability the model lacks, over-long input. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", Shown) {}
/** The request cannot fit any eligible model's context. */
export class ContextLengthExceeded extends Schema.TaggedError<ContextLengthExceeded>()("ContextLengthExceeded", Shown) {}
/** The model's upstream refused the request as the caller's fault, or its plugin cannot express it. */
export class RefusedByModel extends Schema.TaggedError<RefusedByModel>()("RefusedByModel", Shown) {}
/** Key missing, unknown, revoked or lacking the endpoint's scope. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", Shown) {}
/** The balance cannot cover the reserved estimate of the call. */
export class InsufficientFunds extends Schema.TaggedError<InsufficientFunds>()("InsufficientFunds", Shown) {}
/** A key uses a selector it may not use. */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", Shown) {}
/** Unknown id, or an id of another account. */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", Shown) {}
/** A reused idempotency reference or key with different content. */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", Shown) {}
/** Request body over the configured limit. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", Shown) {}
/** The request (its headers and body) did not arrive in time; answered on the raw socket, before the API sees it. */
export class RequestTimeout extends Schema.TaggedError<RequestTimeout>()("RequestTimeout", Shown) {}
/** The key or account is over a rate limit (requests or tokens per minute, concurrent calls). */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  ...Shown,
  ...RetryAfter
}) {}
/** The agent has as many conversations as its cap allows; a new one is refused (spec 7). */
export class ConversationLimitExceeded extends Schema.TaggedError<ConversationLimitExceeded>()("ConversationLimitExceeded", Shown) {}
/** The class asked for cannot be earned by the model, and no fallback to a lower one was allowed. */
export class PrivacyClassUnavailable extends Schema.TaggedError<PrivacyClassUnavailable>()("PrivacyClassUnavailable", {
  ...Shown,
  /** For the `privacy.rejected` event (not part of the body). */
  requested: Schema.optional(PrivacyClass)
}) {}
/** A fault of ours; the message never carries internals. */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", Shown) {}
/** Every eligible route failed. */
export class UpstreamError extends Schema.TaggedError<UpstreamError>()("UpstreamError", Shown) {}
/** A part the gateway needs (its database) cannot be reached; nothing was sent upstream or charged. */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  ...Shown,
  ...RetryAfter
}) {}
/** No confidential runtime of the model has a fresh, verified attestation now. */
export class RuntimeUnavailable extends Schema.TaggedError<RuntimeUnavailable>()("RuntimeUnavailable", {
  ...Shown,
  ...RetryAfter,
  /** For the `privacy.rejected` event (not part of the body): the class asked and why (an attestation refusal reason). */
  requested: Schema.optional(PrivacyClass),
  reason: Schema.optional(Schema.String)
}) {}
/** Every route of the model is below the margin floor of the class it would serve. */
export class MarginFloorViolated extends Schema.TaggedError<MarginFloorViolated>()("MarginFloorViolated", Shown) {}
/** Every eligible route timed out. */
export class UpstreamTimeout extends Schema.TaggedError<UpstreamTimeout>()("UpstreamTimeout", Shown) {}

const classes = [
  InvalidRequest,
  ContextLengthExceeded,
  RefusedByModel,
  Unauthorized,
  InsufficientFunds,
  Forbidden,
  NotFound,
  Conflict,
  RequestTimeout,
  PayloadTooLarge,
  RateLimited,
  ConversationLimitExceeded,
  PrivacyClassUnavailable,
  InternalError,
  UpstreamError,
  ServiceUnavailable,
  RuntimeUnavailable,
  MarginFloorViolated,
  UpstreamTimeout
] as const

/** Any error a caller can see. */
export type ApiError = InstanceType<(typeof classes)[number]>

/**
 * Status, code and OpenAI error `type` of every fact: the one place they are
 * declared. `type` uses OpenAI's values so SDKs that branch on it (`err.type`)
 * behave as with OpenAI; `code` is ours and more precise.
 */
export const FACTS = {
  InvalidRequest: { status: 400, code: "invalid_request", type: "invalid_request_error" },
  ContextLengthExceeded: { status: 400, code: "context_length_exceeded", type: "invalid_request_error" },
  RefusedByModel: { status: 400, code: "invalid_request", type: "invalid_request_error" },
  Unauthorized: { status: 401, code: "unauthorized", type: "authentication_error" },
  InsufficientFunds: { status: 402, code: "insufficient_funds", type: "insufficient_quota" },
  Forbidden: { status: 403, code: "forbidden", type: "permission_error" },
  NotFound: { status: 404, code: "not_found", type: "invalid_request_error" },
  Conflict: { status: 409, code: "idempotency_conflict", type: "invalid_request_error" },
  RequestTimeout: { status: 408, code: "request_timeout", type: "invalid_request_error" },
  PayloadTooLarge: { status: 413, code: "payload_too_large", type: "invalid_request_error" },
  RateLimited: { status: 429, code: "rate_limited", type: "rate_limit_error" },
  ConversationLimitExceeded: { status: 429, code: "conversation_limit_exceeded", type: "rate_limit_error" },
  PrivacyClassUnavailable: { status: 422, code: "privacy_class_unavailable_for_model", type: "invalid_request_error" },
  InternalError: { status: 500, code: "internal_error", type: "api_error" },
  UpstreamError: { status: 502, code: "upstream_error", type: "api_error" },
  ServiceUnavailable: { status: 503, code: "service_unavailable", type: "api_error" },
  RuntimeUnavailable: { status: 503, code: "privacy_class_runtime_unavailable", type: "api_error" },
  MarginFloorViolated: { status: 503, code: "margin_floor_violated", type: "api_error" },
  UpstreamTimeout: { status: 504, code: "upstream_timeout", type: "api_error" }
} as const satisfies Record<ApiError["_tag"], { readonly status: number; readonly code: string; readonly type: string }>

/** Whether a value is one of the errors above. */
export const isApiError = (value: unknown): value is ApiError =>
  value instanceof Error && "_tag" in value && typeof value._tag === "string" && Object.hasOwn(FACTS, value._tag)

/** HTTP status of an error a caller can see. */
export const statusOf = (error: ApiError): number => FACTS[error._tag].status

/** The `code` of an error a caller can see. */
export const codeOf = (error: ApiError): string => FACTS[error._tag].code

/** The contract's envelope of an error, as sent in a body or an SSE error frame; message and param are bounded (`clip`). */
export const envelopeOf = (error: ApiError, requestId: string | null) => ({
  error: {
    code: codeOf(error),
    type: FACTS[error._tag].type,
    message: clip(error.message),
    param: error.param === undefined || error.param === null ? null : clip(error.param),
    request_id: requestId
  }
})

/** The wire envelope shared by every error status. */
export const ErrorEnvelope = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String,
    type: Schema.String,
    message: Schema.String,
    param: Schema.NullOr(Schema.String),
    request_id: Schema.NullOr(Schema.String)
  })
}).annotations({ identifier: "ErrorEnvelope" })

type ErrorClass = (typeof classes)[number]

// The envelope is the encoded side and the errors of one status the decoded side; the request id
// is read from the fiber while the error is encoded. One wire schema per status keeps the API
// document to one response per status.
const onTheWire = <const C extends ReadonlyArray<ErrorClass>>(status: number, description: string, members: C) => {
  const decoded = Schema.Union(...members) as unknown as Schema.Schema<InstanceType<C[number]>, any>
  return Schema.transformOrFail(ErrorEnvelope, decoded, {
    strict: false,
    decode: ({ error }) => {
      const member = members.find((errorClass) => FACTS[errorClass._tag].code === error.code) ?? members[0]!
      return ParseResult.succeed({ _tag: member._tag, message: error.message, param: error.param })
    },
    encode: (error: any) => Effect.map(FiberRef.get(currentRequestId), (requestId) => envelopeOf(error, requestId))
  }).annotations({ ...HttpApiSchema.annotations({ status }), description }) as any as Schema.Schema<
    InstanceType<C[number]>,
    unknown
  >
}

/** Wire schemas of the errors, one per status, for HttpApi declarations. */
export const Wire = {
  InvalidRequest: onTheWire(
    400,
    "The request is malformed, does not match the schema, or names an unknown model",
    [InvalidRequest, ContextLengthExceeded, RefusedByModel]
  ),
  Unauthorized: onTheWire(401, "The API key is missing, unknown, revoked, or lacks the endpoint's scope", [Unauthorized]),
  InsufficientFunds: onTheWire(402, "The credit balance cannot cover the reserved estimate of the call", [
    InsufficientFunds
  ]),
  Forbidden: onTheWire(403, "The key may not use this selector", [Forbidden]),
  NotFound: onTheWire(404, "No such resource for this account", [NotFound]),
  Conflict: onTheWire(409, "The idempotency reference or key was used before with different content", [Conflict]),
  PayloadTooLarge: onTheWire(413, "The request body is over the configured limit", [PayloadTooLarge]),
  RateLimited: onTheWire(
    429,
    "The key or account is over a rate limit (retry after the Retry-After seconds), or the agent reached its conversation cap",
    [RateLimited, ConversationLimitExceeded]
  ),
  PrivacyClassUnavailable: onTheWire(
    422,
    "The requested privacy class cannot be earned by the model, and falling back to a lower class was not allowed",
    [PrivacyClassUnavailable]
  ),
  InternalError: onTheWire(500, "A fault on our side", [InternalError]),
  UpstreamError: onTheWire(502, "Every eligible route failed", [UpstreamError]),
  ServiceUnavailable: onTheWire(
    503,
    "No route may serve the call now: below the margin floor, or its runtime is unavailable",
    [ServiceUnavailable, RuntimeUnavailable, MarginFloorViolated]
  ),
  UpstreamTimeout: onTheWire(504, "Every eligible route timed out", [UpstreamTimeout])
}
